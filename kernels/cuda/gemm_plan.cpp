#include "kernels/cuda/gemm_plan.h"

#include <climits>
#include <stdexcept>
#include <string>

namespace lact::cuda {

ColumnMajorGemm plan_column_major_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                                       MatrixOperand a, MatrixOperand b, float* c, int64_t ldc, int64_t stride_c,
                                       int64_t batch) {
  for (int64_t v : {m, n, k, a.ld, b.ld, ldc, batch})
    if (v < 0 || v > INT_MAX)
      throw std::invalid_argument("gemm: size " + std::to_string(v) + " is outside cuBLAS's int range");
  // Column-major: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  return {transpose_b, transpose_a, n, m, k, b.data, b.ld, b.stride, a.data, a.ld, a.stride, c, ldc, stride_c, batch};
}

}  // namespace lact::cuda
