// Matrix products with bf16 operands on the CPU (oneDNN matmul): operands rounded to bf16, products
// accumulated and stored in fp32, as the CUDA backend's bf16. For CPUs with bf16 instructions (AVX512-BF16,
// AMX), where they run about twice the fp32 rate; elsewhere refused (they would run slower than fp32).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/backend.h"

namespace lact {

// Whether this build and this CPU can run bf16 products fast; `why` says why not.
bool cpu_bf16_available(std::string* why = nullptr);
// "avx512_core_bf16", "avx512_core_amx", ... (oneDNN's name for the best ISA it uses here), or why none.
std::string cpu_bf16_capability();

class Bf16Gemm {
 public:
  Bf16Gemm();
  ~Bf16Gemm();
  // The Backend::gemm contract (row-major, op(A_b) m x k, batch strides), at bf16 operands.
  void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
            MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lact
