#include "kernels/cuda/gemm_plan.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
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

ColumnMajorGemm plan_typed_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, TypedOperand a,
                                TypedOperand b, void* c, DType c_type, int64_t ldc, int64_t stride_c, int64_t batch) {
  ColumnMajorGemm g = plan_column_major_gemm(transpose_a, transpose_b, m, n, k, {nullptr, a.ld, a.stride},
                                             {nullptr, b.ld, b.stride}, nullptr, ldc, stride_c, batch);
  g.a = b.data, g.b = a.data, g.c = c;  // swapped, as plan_column_major_gemm swaps them
  g.a_type = b.type, g.b_type = a.type, g.c_type = c_type;
  return g;
}

SplitK plan_split_k(int64_t m, int64_t n, int64_t k, int64_t batch) {
  const SplitK whole{1, k};
  if (k < kSplitKMinReduction || m <= 0 || n <= 0 || batch <= 0) return whole;
  const int64_t tiles = (m + 127) / 128 * ((n + 127) / 128) * batch;
  if (tiles >= kSplitKTargetTiles) return whole;
  const int64_t partial_bytes = m * n * batch * static_cast<int64_t>(sizeof(float));
  const int64_t slices = std::min({(kSplitKTargetTiles + tiles - 1) / tiles, k / kSplitKMinSlice, kSplitKMaxSlices,
                                   kSplitKMaxPartialBytes / partial_bytes});
  if (slices < 2) return whole;
  return {slices, k / slices};
}

bool parse_switch(const char* name, const char* value, const char* unset_means) {
  const std::string text = value ? value : "";
  if (text.empty() || text == "1") return true;
  if (text == "0") return false;
  throw std::invalid_argument(std::string(name) + ": '" + text.substr(0, 40) + "' is not 0 or 1 (unset: 1, " +
                              unset_means + ")");
}

bool parse_split_k(const char* value) { return parse_switch("LACT_SPLIT_K", value, "split-K where chosen"); }

bool split_k_from_environment() { return parse_split_k(std::getenv("LACT_SPLIT_K")); }

}  // namespace lact::cuda
