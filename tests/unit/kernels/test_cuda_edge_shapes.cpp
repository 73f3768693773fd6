// The CUDA backend's attention paths and split-K at the shapes where tiling goes wrong, audited before issue 51's
// first GPU run: token counts around the tile sizes (1, 63, 65, 127, 129 against the 128-query blocks and the 16-,
// 32- and 64-key tiles), one view, one head, queries and keys of different counts, every head dim a kernel has an
// instantiation for and ones the fp32 kernel pads (8, 48); the packed attention op through the GPU backend's code on
// each path (fp32, tf32, bf16 on float32 and on bf16 storage through fa2, wmma and the library) at such shapes, and
// with nothing to attend; split-K on bf16 operands wider than the matrices into a C with gaps. Run on the CPU through
// tests/common/cuda_emulator.h against double-precision loops or the CPU backend. Outputs start as NaN, so an
// element a kernel forgets to write fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/bf16_storage.h"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/device_backend.h"
#include "kernels/cuda/gemm_plan.h"
#include "tests/common/emulated_cuda_device.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using bf16 = __nv_bfloat16;
using test::EmulatedDevice;
using test::FakeAttentionLibrary;
using test::random_values;
using test::relative_error;
using EmulatedBackend = cuda::DeviceBackend<EmulatedDevice>;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> bf16_rounded(std::vector<float> v) {
  for (float& x : v) x = cuda::bf16_value(cuda::bf16_bits(x));
  return v;
}

// softmax(q k^T scale) v in double for [batch, queries, d] queries and [batch, keys, d] keys and values.
std::vector<double> double_attention(const std::vector<float>& q, const std::vector<float>& k,
                                     const std::vector<float>& v, int64_t batch, int64_t queries, int64_t keys, int d,
                                     float scale) {
  std::vector<double> out(static_cast<size_t>(batch * queries * d)), p(static_cast<size_t>(keys));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < queries; ++i) {
      double most = -INFINITY, sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int e = 0; e < d; ++e) dot += double(q[(b * queries + i) * d + e]) * k[(b * keys + j) * d + e];
        most = std::max(most, p[j] = dot * scale);
      }
      for (int64_t j = 0; j < keys; ++j) sum += p[j] = std::exp(p[j] - most);
      for (int64_t j = 0; j < keys; ++j)
        for (int e = 0; e < d; ++e) out[(b * queries + i) * d + e] += p[j] / sum * v[(b * keys + j) * d + e];
    }
  return out;
}

struct TileEdge {
  int64_t queries, keys;
};
// Around the 128-query blocks (fa2, fp32 kernel), the 64-query blocks (wmma) and every key tile; a lone query or key.
const TileEdge kTileEdges[] = {{1, 1}, {63, 63}, {65, 65}, {127, 127}, {129, 129}, {1, 129}, {129, 1}, {65, 200}};

// The split-layout kernels on one view-head: the fp32 kernel (padded instantiations for 8 and 48) against double to
// 1e-5; at bf16 the FlashAttention-2-class kernel (16, 32, 64, 128) and the wmma one (16, 32, 64) against double on
// the bf16-rounded operands, to the bounds test_cuda_emulated holds them to (3e-3, 1e-2).
TEST(AttentionEdges, SplitLayoutKernelsAtTileEdges) {
  cuda_emulation::Launcher launch;
  for (const int d : {8, 16, 32, 48, 64, 128})
    for (const TileEdge& t : kTileEdges) {
      const unsigned seed = unsigned(d * 1000 + t.queries + t.keys);
      const auto q = random_values(size_t(t.queries * d), seed, 1.5f), k = random_values(size_t(t.keys * d), seed + 1),
                 v = random_values(size_t(t.keys * d), seed + 2);
      const float scale = 1.0f / std::sqrt(float(d)) * 2.0f;
      const std::string what = "d " + std::to_string(d) + ", " + std::to_string(t.queries) + " queries x " +
                               std::to_string(t.keys) + " keys";
      std::vector<float> out(q.size(), kNaN);
      cuda::attention(launch, q.data(), k.data(), v.data(), out.data(), 1, t.queries, t.keys, d, scale, false);
      EXPECT_LT(relative_error(out, double_attention(q, k, v, 1, t.queries, t.keys, d, scale)), 1e-5) << what;
      const std::vector<double> rounded =
          double_attention(bf16_rounded(q), bf16_rounded(k), bf16_rounded(v), 1, t.queries, t.keys, d, scale);
      if (cuda::attention_fa2_supports(d)) {
        std::vector<float> fa2(q.size(), kNaN);
        cuda::attention(launch, q.data(), k.data(), v.data(), fa2.data(), 1, t.queries, t.keys, d, scale, true);
        EXPECT_LT(relative_error(fa2, rounded), 3e-3) << what << " (fa2)";
      }
      if (cuda::attention_bf16_supports(d)) {
        std::vector<float> wmma(q.size(), kNaN);
        cuda::attention(launch, q.data(), k.data(), v.data(), wmma.data(), 1, t.queries, t.keys, d, scale, true,
                        cuda::OwnAttentionKernel::Wmma);
        EXPECT_LT(relative_error(wmma, rounded), 1e-2) << what << " (wmma)";
      }
    }
}

// The fa2 kernel on bf16 storage, packed qkv of one view and one head (and one of 2 views x 3 heads) at every tile
// edge and head dim, output into columns [4, 4 + dim) of wider rows: against double on the same bf16 values, nothing
// outside its columns written. The 129-token cases also under the adversarial schedule (copies landing at issue,
// warps at different speeds).
TEST(AttentionEdges, Fa2OnBf16StorageAtTileEdges) {
  struct Packed {
    int64_t views, heads, tokens;
  };
  cuda_emulation::Launcher launch;
  for (const int d : {16, 32, 64, 128})
    for (const Packed& p :
         {Packed{1, 1, 1}, Packed{1, 1, 63}, Packed{1, 1, 65}, Packed{1, 1, 127}, Packed{1, 1, 129}, Packed{2, 3, 65}})
      for (const bool adversarial : {false, true}) {
        if (adversarial && p.tokens != 129) continue;
        const int64_t dim = p.heads * d, width = 3 * dim, out_width = dim + 8, rows = p.views * p.tokens;
        const std::vector<float> x = bf16_rounded(random_values(size_t(rows * width), unsigned(d + p.tokens), 1.5f));
        std::vector<bf16> qkv(x.size()), out(size_t(rows * out_width), __float2bfloat16(kNaN));
        for (size_t i = 0; i < x.size(); ++i) qkv[i] = __float2bfloat16(x[i]);
        const float scale = 2.0f / std::sqrt(float(d));
        {
          const cuda_emulation::ScheduleScope schedule(adversarial);
          cuda::attention_packed(launch, qkv.data(), width, 0, dim, 2 * dim, out.data(), out_width, 4, p.views,
                                 p.tokens, p.heads, d, scale);
        }
        // The heads split out as [views x heads, tokens, d] for the reference, and the output gathered the same way.
        const int64_t n = p.views * p.heads * p.tokens * d;
        std::vector<float> q(n), k(n), v(n), got(n);
        int64_t written_outside = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t e = i % d, t = i / d % p.tokens, h = i / (d * p.tokens) % p.heads,
                        view = i / (d * p.tokens * p.heads);
          const int64_t at = (view * p.tokens + t) * width + h * d + e;
          q[i] = x[at], k[i] = x[at + dim], v[i] = x[at + 2 * dim];
          got[i] = __bfloat162float(out[(view * p.tokens + t) * out_width + 4 + h * d + e]);
        }
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < out_width; ++c)
            written_outside += (c < 4 || c >= 4 + dim) && !std::isnan(__bfloat162float(out[r * out_width + c]));
        const std::string what = "d " + std::to_string(d) + ", " + std::to_string(p.views) + " views x " +
                                 std::to_string(p.heads) + " heads x " + std::to_string(p.tokens) + " tokens" +
                                 (adversarial ? " (adversarial schedule)" : "");
        const std::vector<double> want = double_attention(q, k, v, p.views * p.heads, p.tokens, p.tokens, d, scale);
        EXPECT_LT(relative_error(got, want), 3e-3) << what;
        EXPECT_EQ(written_outside, 0) << what;
      }
}

// One path of the GPU backend's packed attention: precision, LACT_ATTENTION, the library present, qkv's storage.
struct PackedPath {
  const char* name;
  Precision precision;
  const char* choice;
  bool library;
  DType storage;
};
const PackedPath kPackedPaths[] = {
    {"fp32", Precision::Fp32, "", false, DType::F32},
    {"tf32", Precision::Tf32, "", false, DType::F32},
    {"bf16 fa2", Precision::Bf16, "own", false, DType::F32},
    {"bf16 wmma", Precision::Bf16, "wmma", false, DType::F32},
    {"bf16 library", Precision::Bf16, "", true, DType::F32},
    {"bf16 fa2", Precision::Bf16, "own", false, DType::BF16},
    {"bf16 wmma", Precision::Bf16, "wmma", false, DType::BF16},
    {"bf16 library", Precision::Bf16, "", true, DType::BF16},
};

// Whether the path computes this head dim on bf16 operands (else the fp32 kernel runs it).
bool computes_in_bf16(const PackedPath& p, int64_t d) {
  if (p.precision != Precision::Bf16) return false;
  if (p.library) return cuda::sdpa_shape_problem({1, 1, 1, d, 1}).empty();
  return p.choice == std::string("wmma") ? cuda::attention_bf16_supports(int(d)) : cuda::attention_fa2_supports(int(d));
}

// The emulated GPU backend on `path`, LACT_ATTENTION as the path chooses it (read when the backend is made); the
// caller gives it its cuDNN stand-in where the path has one.
std::unique_ptr<EmulatedBackend> backend_on(const PackedPath& path) {
  ::setenv("LACT_ATTENTION", path.choice, 1);
  auto be = std::make_unique<EmulatedBackend>("cuda-emulated", path.precision);
  ::unsetenv("LACT_ATTENTION");
  if (*path.choice)
    be->device().unavailable =
        path.choice == std::string("wmma") ? cuda::kAttentionChosenWmma : cuda::kAttentionChosenOwn;
  return be;
}

// backend_on(path) with its cuDNN stand-in attached where the path has one (the library outlives no backend).
struct BackendOnPath {
  explicit BackendOnPath(const PackedPath& path) : backend(backend_on(path)), library(backend->device()) {
    if (path.library) backend->device().library = &library;
  }
  std::unique_ptr<EmulatedBackend> backend;
  FakeAttentionLibrary library;
};

// Backend::attention_packed through the GPU backend's code on each path, one view and one head at tile edges (and 2
// views x 3 heads), head dims 8 (fp32 kernel and the library only), 16, 64 and 128 (no wmma instance): against the
// CPU backend's packed attention on the same (for bf16 storage: rounded) values, to 1e-5 where the path computes in
// fp32 on float32, 3e-3 where only the output is rounded to bf16, 1e-2 on bf16 operands; the library runs exactly
// where it takes the shape, and no path says anything on stderr.
TEST(AttentionEdges, PackedOpOnEveryPathAtTileEdges) {
  struct Packed {
    int64_t views, heads, tokens;
  };
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  for (const PackedPath& path : kPackedPaths)
    for (const int64_t d : {8, 16, 64, 128})
      for (const Packed& p : {Packed{1, 1, 1}, Packed{1, 1, 65}, Packed{1, 1, 129}, Packed{2, 3, 63}}) {
        BackendOnPath on(path);
        EmulatedBackend& be = *on.backend;
        FakeAttentionLibrary& library = on.library;
        const Shape rows{p.views, p.tokens, 3 * p.heads * d}, merged{p.views, p.tokens, p.heads * d};
        std::vector<float> qkv = random_values(size_t(shape_numel(rows)), unsigned(d * 7 + p.tokens), 1.5f);
        if (path.storage == DType::BF16) qkv = bf16_rounded(qkv);
        const float scale = 2.0f / std::sqrt(float(d));
        Tensor cq = cpu->from_host(rows, qkv.data()), co = cpu->empty(merged);
        cpu->attention_packed(cq, p.heads, d, scale, co);
        Tensor gq = be.empty(rows, path.storage), go = be.empty(merged, path.storage);
        be.upload(gq, qkv.data());
        testing::internal::CaptureStderr();
        be.attention_packed(gq, p.heads, d, scale, go);
        const std::string said = testing::internal::GetCapturedStderr();
        const bool bf16_math = computes_in_bf16(path, d);
        const double tolerance = bf16_math ? 1e-2 : path.storage == DType::BF16 ? 3e-3 : 1e-5;
        const std::string what = std::string(path.name) + (path.storage == DType::BF16 ? " on bf16 storage" : "") +
                                 ", d " + std::to_string(d) + ", " + std::to_string(p.views) + " views x " +
                                 std::to_string(p.heads) + " heads x " + std::to_string(p.tokens) + " tokens";
        EXPECT_LT(relative_error(be.to_host(go), cpu->to_host(co)), tolerance) << what;
        EXPECT_EQ(library.runs > 0, path.library && bf16_math) << what;
        EXPECT_EQ(said, path.library && !bf16_math
                            ? "lact: bf16 attention through lact's own kernel: fake 1.0 refuses this shape: head dim " +
                                  std::to_string(d) + " is not a multiple of 8\n"
                            : "")
            << what;
      }
}

// Nothing to attend (no views, no tokens, no queries, an empty batch): every path returns without touching the
// output, asks the library nothing and says nothing (cuDNN refuses an empty shape, which would otherwise be reported
// as a fallback and named in the path).
TEST(AttentionEdges, NothingToAttendOnEveryPath) {
  for (const PackedPath& path : kPackedPaths) {
    BackendOnPath on(path);
    EmulatedBackend& be = *on.backend;
    FakeAttentionLibrary& library = on.library;
    const std::string path_before = cuda::attention_path(be);
    testing::internal::CaptureStderr();
    for (const Shape& rows : {Shape{0, 5, 96}, Shape{2, 0, 96}}) {
      Tensor qkv = be.empty(rows, path.storage), out = be.empty({rows[0], rows[1], 32}, path.storage);
      be.attention_packed(qkv, 2, 16, 0.25f, out);
    }
    if (path.storage == DType::F32)
      for (const auto& [batch, queries, keys] : {std::tuple{0, 4, 4}, std::tuple{3, 0, 4}}) {
        Tensor q = be.empty({batch, queries, 16}), k = be.empty({batch, keys, 16}), v = be.empty({batch, keys, 16});
        Tensor out = be.empty({batch, queries, 16});
        be.attention(q, k, v, 0.25f, out);
      }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << path.name;
    EXPECT_EQ(library.prepares, 0) << path.name;
    EXPECT_EQ(library.runs, 0) << path.name;
    EXPECT_EQ(cuda::attention_path(be), path_before) << path.name;
  }
}

// Queries with no keys: zeros (a sum of no terms, as the CPU backend and PyTorch's scaled_dot_product_attention
// give) from every path of the split-layout op, head dims 16, 48 (the fp32 kernel pads it), 64 and 128, out NaN
// before; against the CPU backend's output. The library is never asked (it refuses an empty shape: a fallback line
// and a changed path otherwise) and nothing is said.
TEST(AttentionEdges, NoKeysGiveZerosOnEveryPath) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  const int64_t batch = 3, queries = 130;
  for (const PackedPath& path : kPackedPaths) {
    if (path.storage != DType::F32) continue;  // the split-layout op takes float32
    BackendOnPath on(path);
    EmulatedBackend& be = *on.backend;
    FakeAttentionLibrary& library = on.library;
    const std::string path_before = cuda::attention_path(be);
    testing::internal::CaptureStderr();
    for (const int64_t d : {16, 48, 64, 128}) {
      const std::vector<float> q = random_values(size_t(batch * queries * d), unsigned(d));
      Tensor cq = cpu->from_host({batch, queries, d}, q.data()), ck = cpu->empty({batch, 0, d});
      Tensor co = cpu->empty({batch, queries, d});
      cpu->fill(co, kNaN);
      cpu->attention(cq, ck, ck, 0.25f, co);
      const std::vector<float> want = cpu->to_host(co);
      EXPECT_EQ(want, std::vector<float>(want.size(), 0.0f)) << "the CPU backend, d " << d;
      Tensor gq = be.from_host({batch, queries, d}, q.data()), gk = be.empty({batch, 0, d});
      Tensor go = be.empty({batch, queries, d});  // NaN (EmulatedDevice::allocate)
      be.attention(gq, gk, gk, 0.25f, go);
      EXPECT_EQ(be.to_host(go), want) << path.name << ", d " << d;
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << path.name;
    EXPECT_EQ(library.prepares, 0) << path.name;
    EXPECT_EQ(cuda::attention_path(be), path_before) << path.name;
  }
}

// The fa2 launch with no keys on the packed layout's strided operands (2 views x 3 heads of 130 queries, output
// columns [4, 4 + 3 d) of rows 3 d + 8 wide), float and bf16 storage: zeros in every head's columns, nothing outside
// them written (the no-keys fill goes through the strides, as the kernel's stores do).
template <typename T>
void expect_fa2_zeros_without_keys(int d) {
  cuda_emulation::Launcher launch;
  const int64_t views = 2, heads = 3, queries = 130, dim = heads * d, out_width = dim + 8;
  std::vector<T> q(size_t(views * queries * dim)), out(size_t(views * queries * out_width));
  for (T& x : out) cuda::store_float(&x, kNaN);
  cuda::AttentionOperandsOf<T> ops;
  ops.q = q.data(), ops.k = q.data(), ops.v = q.data(), ops.out = out.data() + 4;
  ops.q_strides = ops.kv_strides = {queries * dim, d, dim};
  ops.out_strides = {queries * out_width, d, out_width};
  cuda::attention_fa2(launch, ops, views, heads, queries, 0, d, 0.25f);
  int64_t zeros = 0, untouched = 0;
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    const int64_t column = i % out_width;
    const float x = cuda::load_float(&out[size_t(i)]);
    if (column >= 4 && column < 4 + dim)
      zeros += x == 0.0f;
    else
      untouched += std::isnan(x);
  }
  EXPECT_EQ(zeros, views * queries * dim) << "d " << d;
  EXPECT_EQ(untouched, views * queries * (out_width - dim)) << "d " << d;
}

TEST(AttentionEdges, Fa2WithoutKeysZeroesOnlyTheOutputColumns) {
  for (const int d : {16, 64, 128}) {
    expect_fa2_zeros_without_keys<float>(d);
    expect_fa2_zeros_without_keys<bf16>(d);
  }
}

// A config with window attention or the full-attention baseline of one head of `head_dim` (dim = head_dim), 1 layer.
ModelConfig one_head_config(int64_t head_dim, bool full_attention) {
  const nlohmann::json attention = {{"type", full_attention ? "lact.GlobalAttention" : "model.SelfAttention"},
                                    {"length_dim", full_attention ? "vl" : "l"},
                                    {"params", {{"head_dim", head_dim}, {"use_qk_norm", true}}}};
  const nlohmann::json json = {{"patch_size", 8}, {"dim", head_dim}, {"layers", 1}, {"block_config", {attention}}};
  return parse_model_config(json, "test config");
}

// Head dims over 128 run only through the library at bf16: on every other path (fp32, tf32, LACT_ATTENTION=own and
// wmma, and the library refusing the head dim: 260 is over cuDNN's 256) a model with such attention refuses at its
// load, with the one line naming the head dim, the paths that take it and why not here, before any product; with
// the library at bf16 (192) it loads. The split-layout op at such a head dim throws the same line.
TEST(AttentionEdges, HeadDimsOver128RefusedAtLoadWhereNoPathTakesThem) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  EXPECT_NO_THROW(random_model_weights(one_head_config(260, false), *cpu, 1));  // the CPU runs any head dim
  for (const PackedPath& path : kPackedPaths) {
    if (path.storage != DType::F32) continue;  // the storage follows the precision: one row a path
    for (const int64_t d : {int64_t{192}, int64_t{260}})
      for (const bool full_attention : {false, true}) {
        BackendOnPath on(path);
        EmulatedBackend& be = *on.backend;
        const std::string what = std::string(path.name) + ", d " + std::to_string(d);
        const bool runs = path.library && d <= 256;
        std::string error;
        try {
          random_model_weights(one_head_config(d, full_attention), be, 1);
        } catch (const std::invalid_argument& e) {
          error = e.what();
        }
        EXPECT_EQ(be.device().gemms, 0) << what;
        if (runs) {
          EXPECT_EQ(error, "") << what;
          continue;
        }
        const std::string line = "attention: head dim " + std::to_string(d) +
                                 " is over 128, the most lact's own CUDA kernels take; only cuDNN's fused attention "
                                 "at --precision bf16 runs it (head dims that are multiples of 8, up to 256), or "
                                 "--device cpu (here: ";
        EXPECT_EQ(error.substr(0, line.size()), line) << what;
        EXPECT_EQ(error.find('\n'), std::string::npos) << what;
        EXPECT_EQ(error.back(), ')') << what;
        Tensor q = be.empty({1, 3, d}), out = be.empty({1, 3, d});
        be.fill(q, 0.5f);
        try {
          be.attention(q, q, q, 0.1f, out);
          ADD_FAILURE() << what << ": the op ran";
        } catch (const std::invalid_argument& e) {
          EXPECT_EQ(std::string(e.what()).substr(0, line.size() - 8), line.substr(0, line.size() - 8)) << what;
        }
      }
  }
}

// Split-K (gemm_plan.h) on bf16 operands as the TTT update meets them: A and B column blocks of wider rows (lda, ldb
// past the matrices' widths), a reduction of 20,479 = 4 slices of 5,119 with 3 more in the last, C rows with gaps
// (ldc > n, stride_c > m ldc) that must keep their NaN, beta 0 (C's old NaN ignored) and 1, one matrix and two with a
// shared B; against a double loop on the same bf16 values to 1e-5 relative.
TEST(SplitKEdges, Bf16OperandsOfWiderRowsIntoCWithGaps) {
  const int64_t m = 9, n = 16, k = 20479, pad = 3;
  ASSERT_EQ(cuda::plan_split_k(m, n, k, 1).slices, 4);
  for (const int64_t batch : {1, 2})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const float beta : {0.0f, 1.0f}) {
          EmulatedBackend be("cuda-emulated", Precision::Bf16);
          const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
          const int64_t lda = a_cols + 8, ldb = b_cols + 16, ldc = n + pad, stride_c = m * ldc + 5;
          const int64_t b_stride = batch > 1 ? 0 : b_rows * ldb;  // two matrices: B shared
          const std::vector<float> a = bf16_rounded(random_values(size_t(batch * a_rows * lda), 51)),
                                   b = bf16_rounded(random_values(size_t(b_rows * ldb), 52));
          std::vector<float> c0 = random_values(size_t(batch * stride_c), 53);
          for (int64_t x = 0; x < batch; ++x)
            for (int64_t i = 0; i < stride_c; ++i)
              if (i >= m * ldc || i % ldc >= n) c0[size_t(x * stride_c + i)] = kNaN;  // the gaps
          if (beta == 0.0f)
            for (int64_t x = 0; x < batch; ++x)
              for (int64_t i = 0; i < m * ldc; ++i)
                if (i % ldc < n) c0[size_t(x * stride_c + i)] = kNaN;  // ignored at beta 0, NaN included
          Tensor ga = be.empty({batch, a_rows, lda}, DType::BF16), gb = be.empty({b_rows, ldb}, DType::BF16);
          Tensor gc = be.empty({batch, stride_c});
          be.upload(ga, a.data());
          be.upload(gb, b.data());
          be.upload(gc, c0.data());
          const int64_t gemms_before = be.device().gemms;
          be.gemm_bf16(ta, tb, m, n, k, 0.5f, {ga.raw(), lda, a_rows * lda}, {gb.raw(), ldb, b_stride}, beta, gc.data(),
                       DType::F32, ldc, stride_c, batch);
          const std::vector<float> got = be.to_host(gc);
          std::vector<float> product;
          std::vector<double> want;
          int64_t gaps_changed = 0;
          for (int64_t x = 0; x < batch; ++x)
            for (int64_t i = 0; i < stride_c; ++i) {
              const int64_t r = i / ldc, col = i % ldc;
              const size_t at = size_t(x * stride_c + i);
              if (r >= m || col >= n) {
                gaps_changed += !std::isnan(got[at]);
                continue;
              }
              double sum = 0;
              for (int64_t p = 0; p < k; ++p)
                sum += double(a[x * a_rows * lda + (ta ? p * lda + r : r * lda + p)]) *
                       b[tb ? col * ldb + p : p * ldb + col];
              product.push_back(got[at]);
              want.push_back(0.5 * sum + (beta == 0.0f ? 0.0 : double(c0[at])));
            }
          const std::string what = "batch " + std::to_string(batch) + " ta " + std::to_string(ta) + " tb " +
                                   std::to_string(tb) + " beta " + std::to_string(beta);
          EXPECT_LT(relative_error(product, want), 1e-5) << what;
          EXPECT_EQ(gaps_changed, 0) << what;
          // One batched call for the 3 equal slices and one for the last of a single matrix; a call a slice for two.
          EXPECT_EQ(be.device().gemms - gemms_before, batch == 1 ? 2 : 4) << what;
        }
}

// The render batched over its targets through the GPU backend's code: non-square targets of two sizes in one call
// (batches split where the size changes and where the token tile is full: 16x24 x 3 at 2 a batch, then 24x16, then
// 16x24), from one input view of 24x40, graphs on (each batch shape recorded, then replayed) and off: every image
// against the CPU backend's, to the fixture's fp32 tolerance and the bf16 bounds test_parity holds a GPU to, and the
// recorded images equal to the direct ones bit for bit.
TEST(RenderEdges, NonSquareTargetsInBatchesOfTwoSizes) {
  const ModelConfig config = test::small_config(false, 2);
  const std::vector<PosedImage> inputs = test::random_views(1, 24, 40, 31);
  const std::vector<PosedImage> wide = test::random_views(5, 16, 24, 40), tall = test::random_views(5, 24, 16, 41);
  const std::vector<Camera> targets = {wide[1].camera, wide[2].camera, wide[3].camera, tall[4].camera, wide[4].camera};
  const auto cpu = make_cpu_backend(2);
  ModelOptions options;
  options.token_tile = 2 * (16 / 8) * (24 / 8);  // two 16x24 targets a batch
  const Model reference(random_model_weights(config, *cpu, 5), *cpu, options);
  const std::vector<Image> want = reference.render(reference.encode(inputs), targets);
  for (const auto& [precision, tolerance] : {std::pair{Precision::Fp32, 1e-4}, {Precision::Bf16, 3e-2}}) {
    EmulatedBackend be("cuda-emulated", precision);
    ModelOptions direct_options = options;
    direct_options.graphs = false;
    const Model recorded(random_model_weights(config, be, 5), be, options);
    const Model direct(random_model_weights(config, be, 5), be, direct_options);
    const SceneState state = direct.encode(inputs);
    const std::vector<Image> first = recorded.render(state, targets), replayed = recorded.render(state, targets);
    const std::vector<Image> plain = direct.render(state, targets);
    EXPECT_EQ(be.device().recordings, 3) << precision_name(precision);  // 16x24 x 2, 16x24 x 1, 24x16 x 1
    ASSERT_EQ(plain.size(), targets.size());
    for (size_t i = 0; i < targets.size(); ++i) {
      ASSERT_EQ(plain[i].height, targets[i].height);
      ASSERT_EQ(plain[i].width, targets[i].width);
      std::vector<double> expected(want[i].rgb.begin(), want[i].rgb.end());
      EXPECT_LT(test::max_abs_error(plain[i].rgb, expected), tolerance) << precision_name(precision) << " target " << i;
      EXPECT_EQ(first[i].rgb, plain[i].rgb) << precision_name(precision) << " target " << i << " (recorded)";
      EXPECT_EQ(replayed[i].rgb, plain[i].rgb) << precision_name(precision) << " target " << i << " (replayed)";
    }
  }
}

}  // namespace
}  // namespace lact
