#include "kernels/tensor.h"

#include <sstream>
#include <stdexcept>

namespace lact {

std::string shape_string(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const char* dtype_name(DType type) { return type == DType::F32 ? "float32" : "bfloat16"; }

Tensor::Tensor(std::shared_ptr<float> storage, void* data, Shape shape, Backend* backend, DType dtype)
    : storage_(std::move(storage)), data_(data), shape_(std::move(shape)), backend_(backend), dtype_(dtype) {}

void Tensor::not_float32() const {
  throw std::logic_error(std::string("a ") + dtype_name(dtype_) + " tensor " + shape_string(shape_) +
                         " read as float32");
}

int64_t Tensor::dim(int axis) const {
  if (axis < 0) axis += rank();
  if (axis < 0 || axis >= rank()) throw std::out_of_range("tensor axis out of range");
  return shape_[axis];
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  if (rank() == 0 || begin < 0 || end > shape_[0] || begin > end)
    throw std::out_of_range("tensor slice [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of " +
                            shape_string(shape_));
  const int64_t row = shape_[0] ? numel() / shape_[0] : 0;
  Shape shape = shape_;
  shape[0] = end - begin;
  return Tensor(storage_, static_cast<char*>(data_) + begin * row * dtype_bytes(dtype_), shape, backend_, dtype_);
}

Tensor Tensor::reshape(Shape shape) const {
  if (shape_numel(shape) != numel())
    throw std::invalid_argument("cannot reshape " + shape_string(shape_) + " to " + shape_string(shape));
  return Tensor(storage_, data_, std::move(shape), backend_, dtype_);
}

}  // namespace lact
