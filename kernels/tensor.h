// A float32 tensor: a shape and a view into a buffer that a backend owns.
// Row-major and contiguous always; views select a range of the first dimension or reshape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lact {

class Backend;

using Shape = std::vector<int64_t>;

std::string shape_string(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Wraps memory that `backend` allocated; `storage` keeps it alive.
  Tensor(std::shared_ptr<float> storage, float* data, Shape shape, Backend* backend);

  float* data() const { return data_; }
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
  std::shared_ptr<float> storage_;
  float* data_ = nullptr;
  Shape shape_;
  Backend* backend_ = nullptr;
};

}  // namespace lact
