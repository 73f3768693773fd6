#include "kernels/cpu/bf16_constants.h"

#include "kernels/cpu/dnnl_gemm.h"

namespace lact {

Bf16Constants::~Bf16Constants() {
  for (const auto& [data, entry] : entries_) release(entry);
}

void Bf16Constants::release(const Entry& entry) {
  for (const auto& [layout, values] : entry.packed) *allocated_ -= static_cast<int64_t>(2 * values.size());
  for (const auto& [layout, bytes] : entry.made) *allocated_ -= static_cast<int64_t>(bytes.size());
}

void Bf16Constants::erase_expired() {
  for (auto it = entries_.begin(); it != entries_.end();)
    if (it->second.storage.expired()) {
      release(it->second);
      it = entries_.erase(it);
    } else {
      ++it;
    }
}

void Bf16Constants::mark(const Tensor& t) {
  if (t.empty() || !t.storage()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  erase_expired();
  Entry& entry = entries_[t.data()];
  release(entry);  // a slice of the same memory marked again: start over
  entry = Entry{t.storage(), t.numel(), {}, {}};
}

Bf16Constants::Entry* Bf16Constants::entry_holding(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols,
                                                   int64_t batch) {
  auto it = entries_.find(x.data);
  if (it == entries_.end()) return nullptr;
  Entry& entry = it->second;
  if (entry.storage.expired()) {  // freed; the address may now belong to anything
    release(entry);
    entries_.erase(it);
    return nullptr;
  }
  // The last element the product reads must lie within the marked tensor.
  const int64_t last = (batch - 1) * x.stride + (transpose ? (cols - 1) * x.ld + rows : (rows - 1) * x.ld + cols);
  if (rows <= 0 || cols <= 0 || batch <= 0 || last > entry.numel) return nullptr;
  return &entry;
}

bool Bf16Constants::holds(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  return entry_holding(x, transpose, rows, cols, batch) != nullptr;
}

template <class Buffer, class Fill>
Buffer* Bf16Constants::find_or_fill(std::map<Layout, Buffer> Entry::*copies, const MatrixOperand& x, bool transpose,
                                    int64_t rows, int64_t cols, int64_t batch, const Fill& fill) {
  Entry* entry = entry_holding(x, transpose, rows, cols, batch);
  if (!entry) return nullptr;
  std::map<Layout, Buffer>& kept = entry->*copies;
  const Layout layout{transpose, rows, cols, x.ld, batch == 1 ? 0 : x.stride, batch};
  auto found = kept.find(layout);
  if (found == kept.end()) {
    found = kept.emplace(layout, Buffer()).first;
    *allocated_ += fill(found->second);
  }
  return &found->second;
}

const uint16_t* Bf16Constants::find_or_pack(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols,
                                            int64_t batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Bf16Buffer* packed = find_or_fill(&Entry::packed, x, transpose, rows, cols, batch, [&](Bf16Buffer& out) {
    pack_bf16(x, transpose, rows, cols, batch, out);
    return static_cast<int64_t>(2 * out.size());
  });
  return packed ? packed->data() : nullptr;
}

const void* Bf16Constants::find_or_make(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols,
                                        int64_t batch, size_t bytes, const MakeLayout& make) {
  std::lock_guard<std::mutex> lock(mutex_);
  const RawBuffer<uint8_t>* made =
      find_or_fill(&Entry::made, x, transpose, rows, cols, batch, [&](RawBuffer<uint8_t>& out) {
        Bf16Buffer packed;  // only while making it
        pack_bf16(x, transpose, rows, cols, batch, packed);
        out.resize(bytes);
        make(packed.data(), out.data());
        return static_cast<int64_t>(bytes);
      });
  return made ? made->data() : nullptr;
}

}  // namespace lact
