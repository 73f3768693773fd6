// Our GEMMs are row-major (Backend::gemm); cuBLAS is column-major. A row-major m x n matrix with row stride
// ld is, read column-major, its n x m transpose with the same ld. So C = op(A) op(B) (row-major) is the
// column-major product C^T = op(B)^T op(A)^T: swap the operands and m with n, keep each transpose flag.
// Plain C++ so the mapping is tested on the CPU (tests/unit/kernels/test_cuda_emulated.cpp) against a naive product.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace lact::cuda {

// One cublasGemmStridedBatchedEx call, column-major: C = alpha op(A) op(B) + beta C, op(A) m x k. Each operand's
// storage type: float32 (the products of Backend::gemm) or bf16 (Backend::linear_bf16's; A and B then both bf16).
struct ColumnMajorGemm {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  const void* a;
  int64_t lda, stride_a;
  const void* b;
  int64_t ldb, stride_b;
  void* c;
  int64_t ldc, stride_c;
  int64_t batch;
  DType a_type = DType::F32, b_type = DType::F32, c_type = DType::F32;
};

// Throws std::invalid_argument when a size exceeds what cuBLAS takes (int dimensions and leading dims).
ColumnMajorGemm plan_column_major_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                                       MatrixOperand a, MatrixOperand b, float* c, int64_t ldc, int64_t stride_c,
                                       int64_t batch);

// An operand of either storage type (Backend::gemm's float32 ones, gemm_bf16's and linear_bf16's bf16 ones).
struct TypedOperand {
  const void* data;
  int64_t ld, stride;
  DType type;
};
// plan_column_major_gemm for operands and C of any storage types (the same sizes and range checks).
ColumnMajorGemm plan_typed_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, TypedOperand a,
                                TypedOperand b, void* c, DType c_type, int64_t ldc, int64_t stride_c, int64_t batch);

// Split-K for a product whose output is too small to fill the GPU and whose reduction is long (the TTT update's
// D x d_h directions summed over every token: 768 x 1536 over 196,608 tokens makes 72 tiles of 128^2 for 132 SMs):
// the reduction runs as `slices` products over consecutive ranges of `slice_k` (the last takes the remainder)
// into partial outputs, then one sum. slices = 1: the product as planned. Chosen when k >= kSplitKMinReduction
// and the output has fewer than kSplitKTargetTiles tiles of 128 x 128 (two waves of an H100/H200's 132 SMs):
// enough slices to reach that count, each at least kSplitKMinSlice long, at most kSplitKMaxSlices, with the
// partial outputs within kSplitKMaxPartialBytes.
constexpr int64_t kSplitKMinReduction = 16384, kSplitKTargetTiles = 264, kSplitKMinSlice = 4096;
constexpr int64_t kSplitKMaxSlices = 16, kSplitKMaxPartialBytes = int64_t{64} << 20;
struct SplitK {
  int64_t slices, slice_k;
};
SplitK plan_split_k(int64_t m, int64_t n, int64_t k, int64_t batch);
// An on/off environment switch of the CUDA backend: 1 or unset true, 0 false; anything else throws
// std::invalid_argument "NAME: 'value' is not 0 or 1 (unset: 1, UNSET_MEANS)".
bool parse_switch(const char* name, const char* value, const char* unset_means);
// LACT_SPLIT_K: 1 or unset, split-K where plan_split_k chooses it; 0, every product in one call (to compare
// against). Throws std::invalid_argument naming the variable for any other value.
bool parse_split_k(const char* value);
bool split_k_from_environment();

}  // namespace lact::cuda
