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
//    as column blocks of the packed qkv rows (copied per work item), the output written into the head's columns.
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

// One batch entry's operands: its queries' rows q_ld apart, its keys' k_ld, its values' v_ld, its outputs' out_ld.
struct EntryOperands {
  const float *q, *k, *v;
  float* out;
  int64_t q_ld, k_ld, v_ld, out_ld;
};

// `rows` rows of `cols` floats `ld` apart, as contiguous rows: src itself where they are, else copied to dst.
// The products on the packed qkv's rows (3 dim apart) ran 4-5% slower than the copies and the products on
// contiguous rows (2 views of 1024 tokens, 12 heads of 64, oneDNN, 1 thread: 150 against 144 ms).
const float* contiguous_rows(const float* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  if (ld == cols) return src;
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * cols, src + r * ld, sizeof(float) * cols);
  return dst;
}

}  // namespace

// Attention over `batch` entries whose operands `entry(b)` names (see the file's comment for the work items). An
// item's scratch: its scores (tile x keys), then, where `strided`, its queries, keys and values as contiguous rows.
template <typename Entry>
void CpuBackend::strided_attention(int64_t batch, int64_t queries, int64_t keys, int64_t dim, int64_t value_dim,
                                   float scale, bool strided, const Entry& entry) {
  // No keys: each row a sum of no terms, 0 (as PyTorch's SDPA and the CUDA backend give), not products of depth 0.
  if (keys == 0) {
    for (int64_t b = 0; b < batch; ++b) {
      const EntryOperands e = entry(b);
      for (int64_t r = 0; r < queries; ++r) std::fill_n(e.out + r * e.out_ld, value_dim, 0.0f);
    }
    return;
  }
  const int64_t tile =
      std::min(queries, std::clamp(kScoreBytes / (4 * std::max<int64_t>(keys, 1)), kMinQueryTile, kMaxQueryTile));
  const int64_t tiles = (queries + tile - 1) / tile, items = batch * tiles;
  const size_t scratch = static_cast<size_t>(tile * keys + (strided ? tile * dim + keys * (dim + value_dim) : 0));
  // One item: `rows` queries from `start` of batch entry b.
  auto run_item = [&](int64_t item, float* work, bool threaded_softmax) {
    const int64_t b = item / tiles, start = item % tiles * tile, rows = std::min(tile, queries - start);
    const EntryOperands e = entry(b);
    float *scores = work, *q_rows = work + tile * keys, *k_rows = q_rows + tile * dim, *v_rows = k_rows + keys * dim;
    const float* qb = contiguous_rows(e.q + start * e.q_ld, e.q_ld, rows, dim, q_rows);
    const float* kb = contiguous_rows(e.k, e.k_ld, keys, dim, k_rows);
    const float* vb = contiguous_rows(e.v, e.v_ld, keys, value_dim, v_rows);
    fp32_gemm(false, true, rows, keys, dim, scale, {qb, dim, 0}, {kb, dim, 0}, 0.0f, scores, keys, 0, 1);
#pragma omp parallel for schedule(static) if (threaded_softmax && rows * keys > (1 << 14))
    for (int64_t r = 0; r < rows; ++r) softmax_row(scores + r * keys, keys);
    fp32_gemm(false, false, rows, value_dim, keys, 1.0f, {scores, keys, 0}, {vb, value_dim, 0}, 0.0f,
              e.out + start * e.out_ld, e.out_ld, 0, 1);
  };
  if (items >= omp_get_max_threads() && omp_get_max_threads() > 1 && !omp_in_parallel()) {
#pragma omp parallel
    {
      std::vector<float> work(scratch);
#pragma omp for schedule(dynamic)
      for (int64_t item = 0; item < items; ++item) run_item(item, work.data(), false);
    }
    return;
  }
  std::vector<float> work(scratch);
  for (int64_t item = 0; item < items; ++item) run_item(item, work.data(), true);
}

void CpuBackend::do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) {
  const OpTimer timer(*profiler_, "attention");
  const int64_t queries = q.dim(1), dim = q.dim(2), keys = k.dim(1), value_dim = v.dim(2);
  strided_attention(q.dim(0), queries, keys, dim, value_dim, scale, false, [&](int64_t b) {
    return EntryOperands{q.data() + b * queries * dim,
                         k.data() + b * keys * dim,
                         v.data() + b * keys * value_dim,
                         out.data() + b * queries * value_dim,
                         dim,
                         dim,
                         value_dim,
                         value_dim};
  });
}

// Each head's q, k and v are column blocks of the packed rows (3 dim apart), copied to contiguous rows per work item;
// its output is written straight into its columns of out (rows dim apart). No split or merge around the op.
void CpuBackend::do_attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) {
  const OpTimer timer(*profiler_, "attention");
  const int64_t tokens = qkv.dim(1), dim = heads * head_dim, width = 3 * dim;
  strided_attention(qkv.dim(0) * heads, tokens, tokens, head_dim, head_dim, scale, true, [&](int64_t b) {
    const int64_t view = b / heads, column = b % heads * head_dim;
    const float* rows = qkv.data() + view * tokens * width + column;
    return EntryOperands{rows,  rows + dim, rows + 2 * dim, out.data() + view * tokens * dim + column,
                         width, width,      width,          dim};
  });
}

}  // namespace lact
