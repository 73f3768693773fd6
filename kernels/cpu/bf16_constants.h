// bf16 copies of constant operands (Backend::mark_constant: the model's weights) for the CPU's bf16 products,
// packed the first time a product uses them and kept while the tensor lives. Converting every weight at every
// product cost about a quarter of a rendered view with the 312M model (render ~ one pass over the weights).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/raw_buffer.h"

namespace lact {

class Bf16Constants {
 public:
  // `allocated` counts the packed copies' bytes with the backend's other memory.
  explicit Bf16Constants(std::shared_ptr<std::atomic<int64_t>> allocated) : allocated_(std::move(allocated)) {}
  ~Bf16Constants();
  void mark(const Tensor& t);
  // op(X) (rows x cols per batch entry) packed as pack_bf16 packs it, when X starts at a marked tensor that still
  // lives and lies within it; null otherwise (the product packs it itself).
  const uint16_t* find_or_pack(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch);
  // The same X in a layout of the product's own (oneDNN's blocked weights, one per shape of op(X)): `bytes` bytes
  // that `make` writes from op(X) packed by pack_bf16, made the first time; null where find_or_pack gives null.
  using MakeLayout = std::function<void(const uint16_t* packed, void* out)>;
  const void* find_or_make(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch,
                           size_t bytes, const MakeLayout& make);
  // Whether X starts at a marked tensor that still lives and op(X) lies within it.
  bool holds(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch);

 private:
  using Layout = std::array<int64_t, 6>;  // transpose, rows, cols, ld, stride, batch
  struct Entry {
    std::weak_ptr<float> storage;
    int64_t numel = 0;
    std::map<Layout, Bf16Buffer> packed;
    std::map<Layout, RawBuffer<uint8_t>> made;  // find_or_make's
  };
  void erase_expired();  // with mutex_ held
  void release(const Entry& entry);
  // X's entry where it holds X (with mutex_ held; an expired one erased), else null.
  Entry* entry_holding(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch);
  // X's copy among an entry's `copies` for its layout, made the first time by `fill` (which returns the bytes it
  // holds); null where entry_holding finds no entry. With mutex_ held.
  template <class Buffer, class Fill>
  Buffer* find_or_fill(std::map<Layout, Buffer> Entry::*copies, const MatrixOperand& x, bool transpose, int64_t rows,
                       int64_t cols, int64_t batch, const Fill& fill);

  std::shared_ptr<std::atomic<int64_t>> allocated_;
  std::map<const float*, Entry> entries_;
  std::mutex mutex_;
};

}  // namespace lact
