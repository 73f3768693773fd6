// Our GEMMs are row-major (Backend::gemm); cuBLAS is column-major. A row-major m x n matrix with row stride
// ld is, read column-major, its n x m transpose with the same ld. So C = op(A) op(B) (row-major) is the
// column-major product C^T = op(B)^T op(A)^T: swap the operands and m with n, keep each transpose flag.
// Plain C++ so the mapping is tested on the CPU (tests/unit/kernels/test_cuda_emulated.cpp) against a naive product.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace lact::cuda {

// One cublasGemmStridedBatchedEx call, column-major: C = alpha op(A) op(B) + beta C, op(A) m x k.
struct ColumnMajorGemm {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  const float* a;
  int64_t lda, stride_a;
  const float* b;
  int64_t ldb, stride_b;
  float* c;
  int64_t ldc, stride_c;
  int64_t batch;
};

// Throws std::invalid_argument when a size exceeds what cuBLAS takes (int dimensions and leading dims).
ColumnMajorGemm plan_column_major_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                                       MatrixOperand a, MatrixOperand b, float* c, int64_t ldc, int64_t stride_c,
                                       int64_t batch);

}  // namespace lact::cuda
