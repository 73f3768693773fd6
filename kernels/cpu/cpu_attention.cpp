// Softmax attention on the CPU, as work items of (batch entry, query tile).
//  - With at least as many items as threads, the items run in parallel, each with single-threaded products:
//    the model's attention is many small products (12 heads x views of 256 tokens at the paper's shape), where a
//    product threaded inside spends more time waking threads than working. With fewer items, one at a time with
//    threaded products.
//  - A query tile's scores stay within kScoreBytes (about an L2 cache) whatever the view size: at 536x960 a view
//    has 8040 tokens, and scores of 512 rows (16 MB) went to memory and back three times per tile.
//  - The softmax's exp is a polynomial the compiler vectorizes (libm's expf is one call per score; over 8040-token
//    views it cost more than the products).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/vector_math.h"

namespace lact {

namespace {

constexpr int64_t kScoreBytes = 1 << 20;
constexpr int64_t kMaxQueryTile = 512, kMinQueryTile = 16;

// The largest of n scores, kept in one 16-float vector (GCC's vector extension, split into halves or quarters by
// the narrower clones): a max reduction over one float, or over an array of lanes, was compiled as scalar maxss, a
// third of the softmax's time. Inlined into softmax_row's clones.
inline float row_peak(const float* s, int64_t n) {
  typedef float Lanes __attribute__((vector_size(64)));
  constexpr int64_t kLanes = 16;
  float peak = s[0];
  int64_t i = 0;
  if (n >= kLanes) {
    Lanes lanes;
    std::memcpy(&lanes, s, sizeof lanes);
    for (i = kLanes; i + kLanes <= n; i += kLanes) {
      Lanes next;
      std::memcpy(&next, s + i, sizeof next);
      lanes = next > lanes ? next : lanes;
    }
    for (int64_t l = 0; l < kLanes; ++l) peak = std::max(peak, lanes[l]);
  }
  for (; i < n; ++i) peak = std::max(peak, s[i]);
  return peak;
}

// s <- softmax(s) over n scores: the exps in one loop, their sum in double lanes in another (one loop with a double
// reduction beside the float exps was not vectorized at all, a fifth of the attention's time).
LACT_VECTOR_CLONES void softmax_row(float* s, int64_t n) {
  const float peak = row_peak(s, n);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) s[j] = vector_math::exp(s[j] - peak);
  const double sum = vector_math::lane_sum(n, [s](int64_t j) { return static_cast<double>(s[j]); });
  const float inv = static_cast<float>(1.0 / sum);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

}  // namespace

void CpuBackend::do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) {
  const OpTimer timer(*profiler_, "attention");
  const int64_t batch = q.dim(0), queries = q.dim(1), dim = q.dim(2), keys = k.dim(1), value_dim = v.dim(2);
  const int64_t tile =
      std::min(queries, std::clamp(kScoreBytes / (4 * std::max<int64_t>(keys, 1)), kMinQueryTile, kMaxQueryTile));
  const int64_t tiles = (queries + tile - 1) / tile, items = batch * tiles;
  // One item: `rows` queries from `start` of batch entry b, its scores in `scores` (tile x keys).
  auto run_item = [&](int64_t item, float* scores, bool threaded_softmax) {
    const int64_t b = item / tiles, start = item % tiles * tile, rows = std::min(tile, queries - start);
    const float* qb = q.data() + (b * queries + start) * dim;
    const float* kb = k.data() + b * keys * dim;
    const float* vb = v.data() + b * keys * value_dim;
    fp32_gemm(false, true, rows, keys, dim, scale, {qb, dim, 0}, {kb, dim, 0}, 0.0f, scores, keys, 0, 1);
#pragma omp parallel for schedule(static) if (threaded_softmax && rows * keys > (1 << 14))
    for (int64_t r = 0; r < rows; ++r) softmax_row(scores + r * keys, keys);
    fp32_gemm(false, false, rows, value_dim, keys, 1.0f, {scores, keys, 0}, {vb, value_dim, 0}, 0.0f,
              out.data() + (b * queries + start) * value_dim, value_dim, 0, 1);
  };
  if (items >= omp_get_max_threads() && omp_get_max_threads() > 1 && !omp_in_parallel()) {
#pragma omp parallel
    {
      std::vector<float> scores(static_cast<size_t>(tile * keys));
#pragma omp for schedule(dynamic)
      for (int64_t item = 0; item < items; ++item) run_item(item, scores.data(), false);
    }
    return;
  }
  std::vector<float> scores(static_cast<size_t>(tile * keys));
  for (int64_t item = 0; item < items; ++item) run_item(item, scores.data(), true);
}

}  // namespace lact
