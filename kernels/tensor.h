// A tensor: a shape and a view into a buffer that a backend owns, of float32 elements or, on a backend that stores
// them (the CUDA backend at bf16, issue 51 item 3), bfloat16 ones.
// Row-major and contiguous always; views select a range of the first dimension or reshape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lact {

class Backend;

using Shape = std::vector<int64_t>;

// The element type of a tensor's storage. The ops compute in float32 whatever the storage; bf16 storage halves the
// bytes an activation moves and lets the products run on bf16 operands as they are.
enum class DType { F32, BF16 };
const char* dtype_name(DType type);  // "float32" | "bfloat16"
inline int64_t dtype_bytes(DType type) { return type == DType::F32 ? 4 : 2; }

std::string shape_string(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Wraps memory that `backend` allocated; `storage` keeps it alive.
  Tensor(std::shared_ptr<float> storage, void* data, Shape shape, Backend* backend, DType dtype = DType::F32);

  // The float32 elements; throws std::logic_error for another storage type (so that no op reads bf16 bytes as
  // floats: an op that takes bf16 reads raw()).
  float* data() const {
    if (dtype_ != DType::F32) not_float32();
    return static_cast<float*>(data_);
  }
  void* raw() const { return data_; }
  DType dtype() const { return dtype_; }
  int64_t bytes() const { return numel() * dtype_bytes(dtype_); }
  const std::shared_ptr<float>& storage() const { return storage_; }  // what keeps the memory alive
  const Shape& shape() const { return shape_; }
  int64_t dim(int axis) const;
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  bool empty() const { return data_ == nullptr; }
  Backend* backend() const { return backend_; }

  // Rows [begin, end) of the first dimension, sharing memory.
  Tensor slice(int64_t begin, int64_t end) const;
  // The same memory seen with another shape of equal size.
  Tensor reshape(Shape shape) const;

 private:
  [[noreturn]] void not_float32() const;

  std::shared_ptr<float> storage_;
  void* data_ = nullptr;
  Shape shape_;
  Backend* backend_ = nullptr;
  DType dtype_ = DType::F32;
};

}  // namespace lact
