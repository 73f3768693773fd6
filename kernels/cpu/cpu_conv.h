// The CPU backend's convolution and max-pooling (Backend::conv2d, Backend::max_pool2d; NCHW, fp32): the
// convolution through oneDNN's convolution primitive (a plain loop in a build without oneDNN), the pooling as a
// plain loop (a few reads per output: nothing for a library to gain).
#pragma once

#include <memory>

#include "kernels/tensor.h"

namespace lact {

class CpuConvolutions {
 public:
  CpuConvolutions();
  ~CpuConvolutions();
  // Backend::conv2d's contract, operands checked.
  void conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu, Tensor& y);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Backend::max_pool2d's contract, operands checked.
void cpu_max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y);

}  // namespace lact
