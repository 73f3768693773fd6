// Softmax attention on the CPU, as work items of (batch entry, query tile).
//  - With at least as many items as threads, the items run in parallel, each with single-threaded products:
//    the model's attention is many small products (12 heads x views of 256 tokens at the paper's shape), where a
//    product threaded inside spends more time waking threads than working. With fewer items, one at a time with
//    threaded products.
//  - A query tile's scores stay within kScoreBytes (about an L2 cache) whatever the view size: at 536x960 a view
//    has 8040 tokens, and scores of 512 rows (16 MB) went to memory and back three times per tile.
//  - The softmax's exp is a polynomial the compiler vectorizes (libm's expf is one call per score; over 8040-token
//    views it cost more than the products).
//  - Each entry's operands are strided rows (EntryOperands): attention's split heads, or attention_packed's heads
//    read in place from the packed qkv rows, the output written into the head's columns (no split or merge copies).
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

// One batch entry's operands: its queries' rows q_ld apart, its keys' and values' kv_ld, its outputs' out_ld.
struct EntryOperands {
  const float *q, *k, *v;
  float* out;
  int64_t q_ld, kv_ld, out_ld;
};

}  // namespace

// Attention over `batch` entries whose operands `entry(b)` names (see the file's comment for the work items).
template <typename Entry>
void CpuBackend::strided_attention(int64_t batch, int64_t queries, int64_t keys, int64_t dim, int64_t value_dim,
                                   float scale, const Entry& entry) {
  const int64_t tile =
      std::min(queries, std::clamp(kScoreBytes / (4 * std::max<int64_t>(keys, 1)), kMinQueryTile, kMaxQueryTile));
  const int64_t tiles = (queries + tile - 1) / tile, items = batch * tiles;
  // One item: `rows` queries from `start` of batch entry b, its scores in `scores` (tile x keys).
  auto run_item = [&](int64_t item, float* scores, bool threaded_softmax) {
    const int64_t b = item / tiles, start = item % tiles * tile, rows = std::min(tile, queries - start);
    const EntryOperands e = entry(b);
    fp32_gemm(false, true, rows, keys, dim, scale, {e.q + start * e.q_ld, e.q_ld, 0}, {e.k, e.kv_ld, 0}, 0.0f, scores,
              keys, 0, 1);
#pragma omp parallel for schedule(static) if (threaded_softmax && rows * keys > (1 << 14))
    for (int64_t r = 0; r < rows; ++r) softmax_row(scores + r * keys, keys);
    fp32_gemm(false, false, rows, value_dim, keys, 1.0f, {scores, keys, 0}, {e.v, e.kv_ld, 0}, 0.0f,
              e.out + start * e.out_ld, e.out_ld, 0, 1);
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

void CpuBackend::do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) {
  const OpTimer timer(*profiler_, "attention");
  const int64_t queries = q.dim(1), dim = q.dim(2), keys = k.dim(1), value_dim = v.dim(2);
  strided_attention(q.dim(0), queries, keys, dim, value_dim, scale, [&](int64_t b) {
    return EntryOperands{q.data() + b * queries * dim,
                         k.data() + b * keys * dim,
                         v.data() + b * keys * value_dim,
                         out.data() + b * queries * value_dim,
                         dim,
                         dim,
                         value_dim};
  });
}

// The products read the packed rows in place (row stride 3 dim) and write each head's columns of out (stride dim):
// the same work items as do_attention, with no copies around them.
void CpuBackend::do_attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) {
  const OpTimer timer(*profiler_, "attention");
  const int64_t tokens = qkv.dim(1), dim = heads * head_dim, width = 3 * dim;
  strided_attention(qkv.dim(0) * heads, tokens, tokens, head_dim, head_dim, scale, [&](int64_t b) {
    const int64_t view = b / heads, column = b % heads * head_dim;
    const float* rows = qkv.data() + view * tokens * width + column;
    return EntryOperands{rows,  rows + dim, rows + 2 * dim, out.data() + view * tokens * dim + column, width,
                         width, dim};
  });
}

}  // namespace lact
