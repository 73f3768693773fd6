// The CUDA backend's kernels and launch shapes (kernels/cuda/cuda_ops.cuh), run on the CPU through
// tests/common/cuda_emulator.h, against the CPU backend's ops on random inputs; and the row-major -> cuBLAS
// column-major GEMM mapping against a naive product. Sizes are chosen to leave partial warps, blocks and
// key tiles. Outputs are poisoned with NaN first, so an element a kernel forgets to write fails the test.
// On a GPU, test_ops runs the same ops through the real CUDA backend.
#include <cblas.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <set>
#include <thread>

#include "core/model.h"
#include "core/random_weights.h"
#include "core/safetensors.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/bf16_storage.h"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/cudnn_sdpa_plan.h"
#include "kernels/cuda/device_backend.h"
#include "kernels/cuda/gemm_plan.h"
#include "kernels/cuda/split_heads_silu.cuh"
#include "tests/common/emulated_cuda_device.h"
#include "tests/common/fixture_views.h"
#include "tests/common/lpips_case.h"
#include "tests/common/packed_columns.h"
#include "tests/common/small_models.h"
#include "tests/common/split_heads_silu_cases.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::EmulatedDevice;
using test::EmulatedRecording;
using test::FakeAttentionLibrary;
using test::max_abs_error;
using test::random_values;
using test::relative_error;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

class EmulatedCuda : public ::testing::Test {
 protected:
  Tensor host(const Shape& shape, const std::vector<float>& v) { return cpu->from_host(shape, v.data()); }
  std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  cuda_emulation::Launcher launch;
};

TEST_F(EmulatedCuda, LayerNormRmsNormAndL2Normalize) {
  for (int64_t cols : {7, 32, 77, 200}) {
    const int64_t rows = 13;  // 2 blocks of 8 warps, the second partly idle
    const auto x = random_values(rows * cols, 1, 2.0f), w = random_values(cols, 2);
    Tensor tx = host({rows, cols}, x), tw = host({cols}, w), ty = cpu->empty({rows, cols});
    cpu->layer_norm(tx, tw, 1e-5f, ty);
    std::vector<float> y(x.size(), kNaN);
    cuda::layer_norm(launch, x.data(), w.data(), y.data(), rows, cols, 1e-5f);
    EXPECT_LT(relative_error(y, cpu->to_host(ty)), 1e-5) << "layer_norm cols " << cols;

    cpu->rms_norm(tx, tw, cols, 1e-6f, ty);
    std::vector<float> r = x;  // in place, as the TTT layer calls it
    cuda::rms_norm(launch, r.data(), w.data(), r.data(), rows, cols, 1e-6f);
    EXPECT_LT(relative_error(r, cpu->to_host(ty)), 1e-5) << "rms_norm cols " << cols;

    Tensor tl = host({rows, cols}, x);
    cpu->l2_normalize(tl, cols, 1e-5f);
    std::vector<float> l = x;
    cuda::l2_normalize(launch, l.data(), rows, cols, 1e-5f);
    EXPECT_LT(relative_error(l, cpu->to_host(tl)), 1e-5) << "l2_normalize cols " << cols;
  }
}

TEST_F(EmulatedCuda, ActivationsAndElementwise) {
  const int64_t n = 1000;
  const auto x = random_values(n, 3, 4.0f), z = random_values(n, 4);
  auto check_activation = [&](auto cuda_op, auto cpu_op, const char* name) {
    Tensor t = host({n}, x);
    cpu_op(t);
    std::vector<float> v = x;
    cuda_op(v.data());
    EXPECT_LT(max_abs_error(v, cpu->to_host(t)), 1e-6) << name;
  };
  using cuda::Activation;
  check_activation([&](float* p) { cuda::activation<Activation::Silu>(launch, p, n); },
                   [&](Tensor& t) { cpu->silu(t); }, "silu");
  check_activation([&](float* p) { cuda::activation<Activation::Gelu>(launch, p, n); },
                   [&](Tensor& t) { cpu->gelu(t); }, "gelu");
  check_activation([&](float* p) { cuda::activation<Activation::Sigmoid>(launch, p, n); },
                   [&](Tensor& t) { cpu->sigmoid(t); }, "sigmoid");
  std::vector<float> big = x;
  for (float& v : big) v *= 8.0f;  // over PyTorch's softplus threshold of 20 too
  Tensor tb = host({n}, big);
  cpu->softplus(tb, 1.5f);
  cuda::activation<Activation::Softplus>(launch, big.data(), n, 1.5f);
  EXPECT_LT(max_abs_error(big, cpu->to_host(tb)), 1e-5) << "softplus";

  Tensor ty = host({n}, x), tz = host({n}, z);
  cpu->axpby(ty, 0.3f, tz, -1.25f);
  cpu->add(ty, tz);
  std::vector<float> y = x;
  cuda::axpby(launch, y.data(), 0.3f, z.data(), -1.25f, n);
  cuda::add(launch, y.data(), z.data(), n);
  EXPECT_LT(max_abs_error(y, cpu->to_host(ty)), 1e-6) << "axpby + add";

  const int64_t rows = 25, cols = 40;
  const auto bias = random_values(cols, 5);
  Tensor tx = host({rows, cols}, x), tbias = host({cols}, bias);
  cpu->add_bias(tx, tbias);
  std::vector<float> xb = x;
  cuda::add_bias(launch, xb.data(), bias.data(), rows * cols, cols);
  EXPECT_LT(max_abs_error(xb, cpu->to_host(tx)), 1e-6) << "add_bias";

  std::vector<float> f(n, kNaN);
  cuda::fill(launch, f.data(), n, 2.5f);
  for (float v : f) ASSERT_EQ(v, 2.5f);
}

TEST_F(EmulatedCuda, RowAndBatchScalingAndIdentity) {
  const int64_t batch = 3, rows = 17, cols = 11;
  const auto x = random_values(batch * rows * cols, 6), s = random_values(200, 7);
  Tensor tx = host({batch, rows, cols}, x);
  cpu->scale_rows(tx, s.data() + 2, 5, 9);  // strided as the TTT layer's learning rates
  std::vector<float> y = x;
  cuda::scale_rows(launch, y.data(), s.data() + 2, batch, rows, cols, 5, 9);
  EXPECT_LT(max_abs_error(y, cpu->to_host(tx)), 1e-6) << "scale_rows";

  const std::vector<float> scale = {0.5f, -2.0f, 3.0f};
  cpu->scale_batched(tx, scale);
  cuda::scale_batched(launch, y.data(), scale.data(), batch, rows * cols);
  EXPECT_LT(max_abs_error(y, cpu->to_host(tx)), 1e-6) << "scale_batched";

  const int64_t n = 9;
  const auto sq = random_values(batch * n * n, 8);
  Tensor tsq = host({batch, n, n}, sq);
  cpu->add_scaled_identity(tsq, 1.75f);
  std::vector<float> q = sq;
  cuda::add_scaled_identity(launch, q.data(), batch, n, 1.75f);
  EXPECT_LT(max_abs_error(q, cpu->to_host(tsq)), 1e-6) << "add_scaled_identity";
}

TEST_F(EmulatedCuda, SplitAndMergeHeads) {
  const int64_t views = 2, tokens = 19, heads = 3, head_dim = 8, width = 3 * heads * head_dim;
  const auto x = random_values(views * tokens * width, 9);
  Tensor tx = host({views, tokens, width}, x), tsplit = cpu->empty({views, heads, tokens, head_dim});
  cpu->split_heads(tx, heads * head_dim, heads, head_dim, tsplit);
  std::vector<float> split(views * heads * tokens * head_dim, kNaN);
  cuda::split_heads(launch, x.data(), split.data(), views, tokens, width, heads * head_dim, heads, head_dim);
  EXPECT_EQ(max_abs_error(split, cpu->to_host(tsplit)), 0.0);

  Tensor tmerged = cpu->empty({views, tokens, heads * head_dim});
  cpu->merge_heads(tsplit, tmerged);
  std::vector<float> merged(split.size(), kNaN);
  cuda::merge_heads(launch, split.data(), merged.data(), views, heads, tokens, head_dim);
  EXPECT_EQ(max_abs_error(merged, cpu->to_host(tmerged)), 0.0);
}

// The fused heads kernel launched from a first row past 0 (the chunks of a launch too large for one grid): the rows
// before it untouched, the others bit for bit those of the whole launch.
TEST_F(EmulatedCuda, SplitHeadsSiluKernelStartsAtItsFirstRow) {
  const int64_t views = 2, tokens = 11, heads = 3, d = 7, offset = 5, width = 3 * heads * d + 9, first = 21;
  const int64_t rows = views * heads * tokens;
  const auto x = random_values(views * tokens * width, 31, 3.0f);
  std::vector<float> whole(rows * d, kNaN), part(rows * d, kNaN);
  cuda::split_heads_silu(launch, x.data(), whole.data(), views, tokens, width, offset, heads, d, 1e-5f);
  launch(cuda::split_heads_silu_kernel<float, float>, cuda::row_blocks(rows - first),
         dim3(cuda::kRowsPerBlock * cuda::kWarp), x.data(), part.data(), first, rows - first, tokens, width, offset,
         heads, d, 1e-5f);
  for (int64_t i = 0; i < first * d; ++i) ASSERT_TRUE(std::isnan(part[i])) << i;
  for (int64_t i = first * d; i < rows * d; ++i) ASSERT_EQ(part[i], whole[i]) << i;
}

// The qk norm in place on packed rows (q's columns, then k's, in groups of the head dim): against the CPU backend's
// rms_norm_columns, bit for bit what the rms_norm kernel computes on the split heads, other columns untouched.
TEST_F(EmulatedCuda, RmsNormColumnsOnPackedRows) {
  for (const int64_t d : {8, 64}) {
    const int64_t rows = 13, heads = 3, dim = heads * d, width = 3 * dim;
    const auto x = random_values(rows * width, 3, 2.0f), w = random_values(d, 4);
    Tensor tx = host({rows, width}, x), tw = host({d}, w);
    cpu->rms_norm_columns(tx, dim, dim, tw, 1e-6f);
    std::vector<float> got = x;
    cuda::rms_norm_columns(launch, got.data(), w.data(), rows, width, dim, dim, d, 1e-6f);
    EXPECT_LT(relative_error(got, cpu->to_host(tx)), 1e-5) << "d " << d;
    std::vector<float> k(rows * dim);  // the k third as split rows of groups
    for (int64_t r = 0; r < rows; ++r) std::copy_n(x.begin() + r * width + dim, dim, k.begin() + r * dim);
    cuda::rms_norm(launch, k.data(), w.data(), k.data(), rows * heads, d, 1e-6f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        ASSERT_EQ(got[r * width + c], c >= dim && c < 2 * dim ? k[r * dim + c - dim] : x[r * width + c])
            << "d " << d << " row " << r << " column " << c;
  }
}

TEST_F(EmulatedCuda, SwigluForwardAndBackward) {
  const int64_t n = 777;
  const auto g = random_values(n, 10, 2.0f), u = random_values(n, 11), d = random_values(n, 12);
  Tensor tg = host({n}, g), tu = host({n}, u), td = host({n}, d), to = cpu->empty({n});
  cpu->swiglu(tg, tu, to);
  std::vector<float> out(n, kNaN);
  cuda::swiglu(launch, g.data(), u.data(), out.data(), n);
  EXPECT_LT(max_abs_error(out, cpu->to_host(to)), 1e-6) << "swiglu";

  cpu->swiglu_backward(tg, tu, td);
  std::vector<float> gg = g, uu = u, dd = d;
  cuda::swiglu_backward(launch, gg.data(), uu.data(), dd.data(), n);
  EXPECT_LT(max_abs_error(gg, cpu->to_host(tg)), 1e-6) << "dgate";
  EXPECT_LT(max_abs_error(uu, cpu->to_host(tu)), 1e-6) << "hidden";
  EXPECT_LT(max_abs_error(dd, cpu->to_host(td)), 1e-6) << "dup";
}

// The packed backward with the learning rates (swiglu_backward_packed_kernel): against the CPU backend's op, and bit
// for bit the swiglu_backward kernel followed by the scale_rows kernel on each output of the separate tensors.
TEST_F(EmulatedCuda, SwigluBackwardPackedFoldsTheRowScaling) {
  const int64_t heads = 3, tokens = 29, cols = 40, n = heads * tokens * cols;
  const auto g = random_values(n, 13, 2.0f), u = random_values(n, 14), d = random_values(n, 15),
             lr = random_values(tokens * 3 * heads, 16);
  const Shape shape{heads, tokens, cols}, packed{heads, tokens, 2 * cols};
  Tensor tgu = host(packed, test::side_by_side(g, u, cols)), td = host(shape, d);
  cpu->swiglu_backward_packed(tgu, td, lr.data(), heads, 1, 3 * heads);
  std::vector<float> gu = test::side_by_side(g, u, cols), dd = d;
  cuda::swiglu_backward_packed(launch, gu.data(), dd.data(), lr.data(), heads, tokens, cols, heads, 1, 3 * heads);
  EXPECT_LT(max_abs_error(gu, cpu->to_host(tgu)), 1e-6) << "dgate | dup";
  EXPECT_LT(max_abs_error(dd, cpu->to_host(td)), 1e-6) << "hidden";
  std::vector<float> sg = g, su = u, sd = d;
  cuda::swiglu_backward(launch, sg.data(), su.data(), sd.data(), n);
  cuda::scale_rows(launch, sg.data(), lr.data(), heads, tokens, cols, 1, 3 * heads);
  cuda::scale_rows(launch, su.data(), lr.data() + heads, heads, tokens, cols, 1, 3 * heads);
  cuda::scale_rows(launch, sd.data(), lr.data() + 2 * heads, heads, tokens, cols, 1, 3 * heads);
  EXPECT_EQ(gu, test::side_by_side(sg, sd, cols));
  EXPECT_EQ(dd, su);
}

// swiglu_packed_kernel: against the CPU backend's op, and bit for bit swiglu_kernel on the separate tensors.
TEST_F(EmulatedCuda, SwigluPackedWritesTheGateColumns) {
  const int64_t rows = 41, cols = 37, n = rows * cols;
  const auto g = random_values(n, 17, 2.0f), u = random_values(n, 18);
  Tensor tgu = host({1, rows, 2 * cols}, test::side_by_side(g, u, cols));
  cpu->swiglu_packed(tgu);
  std::vector<float> gu = test::side_by_side(g, u, cols), out(n, kNaN);
  cuda::swiglu_packed(launch, gu.data(), rows, cols);
  EXPECT_LT(max_abs_error(gu, cpu->to_host(tgu)), 1e-6);
  cuda::swiglu(launch, g.data(), u.data(), out.data(), n);
  EXPECT_EQ(gu, test::side_by_side(out, u, cols));
}

TEST_F(EmulatedCuda, BatchedDotColumnNormsAndRestore) {
  const int64_t batch = 3, rows = 23, cols = 300;  // 6900 per entry: several partial-sum blocks
  const auto a = random_values(batch * rows * cols, 13), b = random_values(batch * rows * cols, 14);
  Tensor ta = host({batch, rows, cols}, a), tb = host({batch, rows, cols}, b);
  const std::vector<double> expected = cpu->batched_dot(ta, tb);
  const int64_t per = rows * cols, parts = cuda::batched_dot_parts(per);
  EXPECT_GT(parts, 1);
  std::vector<double> partial(batch * parts, std::nan(""));
  cuda::batched_dot(launch, a.data(), b.data(), batch, per, partial.data());
  for (int64_t i = 0; i < batch; ++i) {
    double sum = 0;
    for (int64_t p = 0; p < parts; ++p) sum += partial[i * parts + p];
    EXPECT_NEAR(sum, expected[i], 1e-9 * std::abs(expected[i]) + 1e-9) << "batched_dot entry " << i;
  }

  Tensor tnorms = cpu->empty({batch, cols});
  cpu->column_norms(ta, tnorms);
  std::vector<float> norms(batch * cols, kNaN);
  cuda::column_norms(launch, a.data(), norms.data(), batch, rows, cols);
  EXPECT_LT(relative_error(norms, cpu->to_host(tnorms)), 1e-6) << "column_norms";

  const auto target = random_values(batch * cols, 15);
  Tensor ttarget = host({batch, cols}, target);
  cpu->restore_column_norms(ta, ttarget, 1e-5f);
  std::vector<float> w = a;
  cuda::restore_column_norms(launch, w.data(), target.data(), batch, rows, cols, 1e-5f);
  EXPECT_LT(relative_error(w, cpu->to_host(ta)), 1e-6) << "restore_column_norms";
}

struct AttentionCase {
  int64_t batch, queries, keys;
  int d;
  float scale;
};

// The emulated kernel's relative error against the CPU backend's attention on random inputs.
double emulated_attention_error(Backend& cpu, const AttentionCase& c, bool bf16, unsigned seed,
                                cuda::OwnAttentionKernel kernel = cuda::OwnAttentionKernel::Fa2) {
  const auto q = random_values(c.batch * c.queries * c.d, seed), k = random_values(c.batch * c.keys * c.d, seed + 1),
             v = random_values(c.batch * c.keys * c.d, seed + 2);
  Tensor tq = cpu.from_host({c.batch, c.queries, c.d}, q.data()), tk = cpu.from_host({c.batch, c.keys, c.d}, k.data()),
         tv = cpu.from_host({c.batch, c.keys, c.d}, v.data()), to = cpu.empty({c.batch, c.queries, c.d});
  cpu.attention(tq, tk, tv, c.scale, to);
  std::vector<float> out(c.batch * c.queries * c.d, kNaN);
  cuda_emulation::Launcher launch;
  cuda::attention(launch, q.data(), k.data(), v.data(), out.data(), c.batch, c.queries, c.keys, c.d, c.scale, bf16,
                  kernel);
  return relative_error(out, cpu.to_host(to));
}

TEST_F(EmulatedCuda, FusedAttentionMatchesCpuAttention) {
  // Head dims for every instantiation (16, 32, 64, 128) with padding, queries over one block, keys over
  // partial tiles, a large scale to make the online softmax's rescaling matter.
  for (const AttentionCase& c : {AttentionCase{2, 150, 70, 12, 0.3f}, AttentionCase{1, 129, 33, 32, 0.18f},
                                 AttentionCase{3, 40, 200, 64, 2.0f}, AttentionCase{1, 130, 47, 100, 0.1f}})
    EXPECT_LT(emulated_attention_error(*cpu, c, false, 16), 1e-5) << "d " << c.d << " keys " << c.keys;
}

// The older wmma tensor-core kernel (bf16 operands, LACT_ATTENTION=wmma): against the fp32 CPU attention within
// bf16's tolerance (1e-2 relative), and visibly off fp32 (it did take the bf16 path).
TEST_F(EmulatedCuda, TensorCoreAttentionMatchesCpuAttentionToBf16Precision) {
  for (const AttentionCase& c : {AttentionCase{2, 70, 130, 64, 0.125f}, AttentionCase{1, 64, 64, 32, 0.5f},
                                 AttentionCase{3, 17, 5, 16, 1.0f}, AttentionCase{1, 100, 200, 64, 0.5f}}) {
    ASSERT_TRUE(cuda::attention_bf16_supports(c.d));
    const double err = emulated_attention_error(*cpu, c, true, 26, cuda::OwnAttentionKernel::Wmma);
    EXPECT_LT(err, 1e-2) << "d " << c.d << " keys " << c.keys;
    EXPECT_GT(err, 1e-5) << "bf16 rounding should show";
    std::printf("bf16 wmma attention d %d, %lld queries x %lld keys: rel err %.3g\n", c.d, (long long)c.queries,
                (long long)c.keys, err);
  }
}

TEST_F(EmulatedCuda, RayTokensMatchTheCpuBackend) {
  const int height = 16, width = 32, patch = 8, views = 3;
  std::vector<RayPose> poses(views);
  for (int i = 0; i < views; ++i) {
    poses[i] = {30.0f + i, 28.0f, 15.5f, 7.25f, {}};
    const auto m = random_values(12, 50 + i);
    for (int j = 0; j < 12; ++j) poses[i].c2w[j] = m[j];
  }
  const auto pixels = random_values(size_t(views) * height * width * 3, 53);
  const int64_t n = int64_t(views) * height * width * 12;
  Tensor images = host({views, height, width, 3}, pixels),
         out = cpu->empty({n / (patch * patch * 12), patch * patch * 12});
  for (bool with_images : {true, false}) {
    cpu->ray_tokens(poses, with_images ? &images : nullptr, height, width, patch, out);
    std::vector<float> tokens(n, kNaN);
    cuda::ray_tokens(launch, poses.data(), with_images ? pixels.data() : nullptr, tokens.data(), views, height, width,
                     patch);
    EXPECT_EQ(max_abs_error(tokens, cpu->to_host(out)), 0.0) << "with images " << with_images;
  }
}

TEST_F(EmulatedCuda, ZeroDepthProductScalesC) {
  const int64_t batch = 2, m = 5, n = 6, ldc = 8, stride = 50;
  std::vector<float> c(batch * stride, 1.0f), expected = c;
  c[3] = kNaN;  // beta = 0 must not propagate NaN
  cuda::scale_matrix(launch, c.data(), batch, m, n, ldc, stride, 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) expected[b * stride + r * ldc + j] = 0.0f;
  EXPECT_EQ(max_abs_error(c, expected), 0.0);
}

// Runs a ColumnMajorGemm the way cuBLAS defines it, in double.
void run_column_major(const cuda::ColumnMajorGemm& g, double alpha, double beta) {
  for (int64_t x = 0; x < g.batch; ++x)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const float* a = static_cast<const float*>(g.a) + x * g.stride_a;
          const float* b = static_cast<const float*>(g.b) + x * g.stride_b;
          const double av = g.transpose_a ? a[p + i * g.lda] : a[i + p * g.lda];
          const double bv = g.transpose_b ? b[j + p * g.ldb] : b[p + j * g.ldb];
          sum += av * bv;
        }
        float& cv = static_cast<float*>(g.c)[x * g.stride_c + i + j * g.ldc];
        cv = static_cast<float>(alpha * sum + (beta == 0 ? 0.0 : beta * cv));
      }
}

TEST_F(EmulatedCuda, GemmPlanMapsRowMajorToColumnMajor) {
  const int64_t batch = 2, m = 7, n = 5, k = 4;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Padded leading dimensions and strides, a shared (stride 0) B.
      const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
      const int64_t sa = (ta ? k : m) * lda + 5, sc = m * ldc + 4;
      const auto a = random_values(batch * sa, 20), b = random_values((tb ? n : k) * ldb, 21),
                 c0 = random_values(batch * sc, 22);
      std::vector<float> c = c0;
      const auto plan = cuda::plan_column_major_gemm(ta, tb, m, n, k, {a.data(), lda, sa}, {b.data(), ldb, 0}, c.data(),
                                                     ldc, sc, batch);
      run_column_major(plan, 0.5, -1.5);
      for (int64_t x = 0; x < batch; ++x)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < k; ++p)
              sum += double(ta ? a[x * sa + p * lda + i] : a[x * sa + i * lda + p]) *
                     (tb ? b[j * ldb + p] : b[p * ldb + j]);
            const double want = 0.5 * sum - 1.5 * c0[x * sc + i * ldc + j];
            EXPECT_NEAR(c[x * sc + i * ldc + j], want, 1e-5) << "ta " << ta << " tb " << tb;
          }
    }
  EXPECT_THROW(cuda::plan_column_major_gemm(false, false, int64_t(1) << 32, 1, 1, {nullptr, 1, 0}, {nullptr, 1, 0},
                                            nullptr, 1, 0, 1),
               std::invalid_argument);
}

// ---- The PTX primitives of the FlashAttention-2-class kernel as the emulator runs them (kernels/cuda/
// mma_primitives.cuh), against plain loops: the fragment layouts are the PTX ISA's tables, written out here.

// One warp: A (16x16), B (16x8, stored [k][n]) and C (16x8) into mma.sync m16n8k16 fragments, acc = a b + c,
// and acc back to D, all by the tables: lane = 4 group + quad; a[r] = A[group + 8 (r % 2)][2 quad + 8 (r / 2)
// + {0,1}]; b[r] = B[2 quad + 8 r + {0,1}][group]; acc[r] = C[group + 8 (r / 2)][2 quad + r % 2].
__global__ void mma_probe_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = threadIdx.x, group = lane / 4, quad = lane % 4;
  uint32_t af[4], bf[2];
  float acc[4];
  for (int r = 0; r < 4; ++r) {
    const int row = group + 8 * (r % 2), col = 2 * quad + 8 * (r / 2);
    af[r] = cuda_emulation::pack_bf16x2(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (int r = 0; r < 2; ++r) {
    const int k = 2 * quad + 8 * r;
    bf[r] = cuda_emulation::pack_bf16x2(b[k * 8 + group], b[(k + 1) * 8 + group]);
  }
  for (int r = 0; r < 4; ++r) acc[r] = c[(group + 8 * (r / 2)) * 8 + 2 * quad + r % 2];
  cuda_emulation::mma_bf16_16x8x16(acc, af, bf);
  for (int r = 0; r < 4; ++r) d[(group + 8 * (r / 2)) * 8 + 2 * quad + r % 2] = acc[r];
}

float bf16_rounded(float x) { return __bfloat162float(__float2bfloat16(x)); }

TEST(EmulatedPrimitives, MmaM16n8k16MatchesAPlainProductOfBf16Operands) {
  const auto a = random_values(16 * 16, 60), b = random_values(16 * 8, 61), c = random_values(16 * 8, 62);
  std::vector<float> d(16 * 8, kNaN);
  cuda_emulation::launch(mma_probe_kernel, dim3(1), dim3(32), a.data(), b.data(), c.data(), d.data());
  double worst = 0, worst_unrounded = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double sum = c[i * 8 + j], exact = c[i * 8 + j];
      for (int k = 0; k < 16; ++k) {
        sum += double(bf16_rounded(a[i * 16 + k])) * bf16_rounded(b[k * 8 + j]);
        exact += double(a[i * 16 + k]) * b[k * 8 + j];
      }
      worst = std::max(worst, std::abs(d[i * 8 + j] - sum));
      worst_unrounded = std::max(worst_unrounded, std::abs(d[i * 8 + j] - exact));
    }
  EXPECT_LT(worst, 1e-5);                                            // fp32 accumulation of exact bf16 products
  EXPECT_GT(worst_unrounded, 1e-4);                                  // and the operands were rounded to bf16
  EXPECT_EQ(cuda_emulation::pack_bf16x2(1.0f, -2.0f), 0xc0003f80u);  // lo in the low half, round to nearest even
  EXPECT_EQ(cuda_emulation::pack_bf16x2(1.0f + 1.0f / 256, 1.0f + 3.0f / 256), 0x3f823f80u);
}

// One warp, per thread two 16-byte copies in two groups (the second a zero-fill on odd lanes): what each thread
// sees before any wait, after wait_group 1 and after wait_group 0.
__global__ void cp_async_probe_kernel(const float* src, float* seen) {
  LACT_SHARED(__align__(16) float, tile, [2][32 * 4]);
  const int t = threadIdx.x;
  for (int s = 0; s < 2; ++s)
    for (int e = 0; e < 4; ++e) tile[s][t * 4 + e] = -1.0f;
  __syncthreads();
  cuda_emulation::cp_async_16(&tile[0][t * 4], src + t * 4, true);
  cuda_emulation::cp_async_commit();
  cuda_emulation::cp_async_16(&tile[1][t * 4], src + 128 + t * 4, t % 2 == 0);
  cuda_emulation::cp_async_commit();
  seen[t * 4 + 0] = tile[0][t * 4 + 1];
  cuda_emulation::cp_async_wait<1>();
  seen[t * 4 + 1] = tile[0][t * 4 + 1];
  seen[t * 4 + 2] = tile[1][t * 4 + 2];
  cuda_emulation::cp_async_wait<0>();
  seen[t * 4 + 3] = tile[1][t * 4 + 2];
}

TEST(EmulatedPrimitives, CpAsyncLandsByGroupAndZeroFills) {
  std::vector<float> src(256), seen(128, kNaN);
  for (int i = 0; i < 256; ++i) src[i] = float(i);
  alignas(16) static float aligned[256];
  std::copy(src.begin(), src.end(), aligned);
  cuda_emulation::launch(cp_async_probe_kernel, dim3(1), dim3(32), static_cast<const float*>(aligned), seen.data());
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(seen[t * 4 + 0], -1.0f) << t;             // not landed before a wait
    EXPECT_EQ(seen[t * 4 + 1], float(t * 4 + 1)) << t;  // group 0 after wait_group 1
    EXPECT_EQ(seen[t * 4 + 2], -1.0f) << t;             // group 1 still in flight
    EXPECT_EQ(seen[t * 4 + 3], t % 2 ? 0.0f : float(128 + t * 4 + 2)) << t;
  }
}

// Shared memory as a GPU block finds it: block 0 writes its cells and reads them back, every later block (and a
// second launch) reads them before writing; what a block did not write itself reads as NaN (0xff bytes: float and
// double), never the previous block's values, which a GPU may or may not still hold there.
__global__ void shared_memory_probe_kernel(float* seen, double* seen_double) {
  LACT_SHARED(float, cells, [64]);
  LACT_SHARED(double, wide, [64]);
  const int t = threadIdx.x, block = blockIdx.x;
  if (block == 0) cells[t] = float(t), wide[t] = double(t);
  __syncthreads();
  seen[block * 64 + t] = cells[t];
  seen_double[block * 64 + t] = wide[t];
  cells[t] = 1.0f, wide[t] = 1.0;  // what the next block would find on a lucky GPU
}

TEST(EmulatedPrimitives, SharedMemoryStartsAsNanInEachBlock) {
  for (int launch = 0; launch < 2; ++launch) {
    std::vector<float> seen(3 * 64, 0.0f);
    std::vector<double> seen_double(3 * 64, 0.0);
    cuda_emulation::launch(shared_memory_probe_kernel, dim3(3), dim3(64), seen.data(), seen_double.data());
    for (int i = 0; i < 3 * 64; ++i) {
      if (i < 64) {
        EXPECT_EQ(seen[i], float(i)) << i;
        EXPECT_EQ(seen_double[i], double(i)) << i;
        continue;
      }
      EXPECT_TRUE(std::isnan(seen[i])) << "launch " << launch << ", block " << i / 64 << ": " << seen[i];
      EXPECT_TRUE(std::isnan(seen_double[i])) << "launch " << launch << ", block " << i / 64 << ": " << seen_double[i];
    }
  }
}

// The emulated device's memory starts as NaN bytes, scratch included (cudaMallocAsync hands out pool memory as the
// last user left it): a block released and taken again does not come back as it was written.
TEST(EmulatedPrimitives, DeviceMemoryAndScratchStartAsNan) {
  EmulatedDevice device;
  for (int round = 0; round < 2; ++round) {
    auto* scratch = static_cast<float*>(device.scratch(64 * sizeof(float)));
    for (int i = 0; i < 64; ++i) EXPECT_TRUE(std::isnan(scratch[i])) << "round " << round << ", element " << i;
    std::fill_n(scratch, 64, 0.0f);
    device.release(scratch);
    const std::shared_ptr<float> tensor = device.allocate(64 * sizeof(float), {64});
    for (int i = 0; i < 64; ++i) EXPECT_TRUE(std::isnan(tensor.get()[i])) << "round " << round << ", element " << i;
    std::fill_n(tensor.get(), 64, 0.0f);
  }
}

// lact's FlashAttention-2-class kernel (the default own bf16 kernel) on random inputs, against the CPU backend's
// fp32 attention twice: of the inputs themselves, within bf16's tolerance (1e-2 relative, where the scale keeps
// the logits' rounding small), and of the inputs rounded to bf16, which leaves only P's rounding and the fp32
// sums (3e-3); visibly off fp32 either way. Queries over one 128-query block and not a multiple of it, keys over
// partial tiles (32 keys at d 64, 64 at d <= 32, 16 at d 128), several view-heads, a large scale so that the
// running max moves between tiles and the rescaling matters, a single key. Each case twice: the emulator's copies
// landing at the wait (a read before the wait fails) and at the issue with warps at different speeds (a refill
// of a stage another warp still reads fails); each was checked to fail with its barrier or wait removed.
using Fa2Schedule = cuda_emulation::ScheduleScope;

TEST_F(EmulatedCuda, Fa2AttentionMatchesCpuAttentionToBf16Precision) {
  for (const bool adversarial : {false, true})
    for (const AttentionCase& c : {AttentionCase{2, 200, 150, 64, 0.125f}, AttentionCase{1, 129, 33, 32, 0.5f},
                                   AttentionCase{3, 40, 300, 16, 1.0f}, AttentionCase{1, 130, 40, 128, 0.09f},
                                   AttentionCase{2, 70, 97, 64, 3.0f}, AttentionCase{1, 5, 1, 64, 1.0f}}) {
      ASSERT_TRUE(cuda::attention_fa2_supports(c.d));
      auto q = random_values(c.batch * c.queries * c.d, 27), k = random_values(c.batch * c.keys * c.d, 28),
           v = random_values(c.batch * c.keys * c.d, 29);
      std::vector<float> out(q.size(), kNaN);
      {
        const Fa2Schedule schedule(adversarial);
        cuda::attention(launch, q.data(), k.data(), v.data(), out.data(), c.batch, c.queries, c.keys, c.d, c.scale,
                        true);
      }
      auto cpu_attention = [&] {
        Tensor tq = host({c.batch, c.queries, c.d}, q), tk = host({c.batch, c.keys, c.d}, k),
               tv = host({c.batch, c.keys, c.d}, v), to = cpu->empty({c.batch, c.queries, c.d});
        cpu->attention(tq, tk, tv, c.scale, to);
        return cpu->to_host(to);
      };
      const double err = relative_error(out, cpu_attention());
      for (auto* x : {&q, &k, &v})
        for (float& e : *x) e = bf16_rounded(e);
      const double err_rounded = relative_error(out, cpu_attention());
      const std::string what = "d " + std::to_string(c.d) + " keys " + std::to_string(c.keys) +
                               (adversarial ? " (copies at issue, skewed warps)" : "");
      if (c.scale <= 1.0f) {
        EXPECT_LT(err, 1e-2) << what;
      }
      EXPECT_LT(err_rounded, 3e-3) << what;
      if (c.keys > 1) {
        EXPECT_GT(err_rounded, 1e-5) << what << ": P's bf16 rounding should show";
      }
      std::printf(
          "bf16 fa2 attention d %d, %lld x %lld queries x %lld keys, scale %g%s: rel err %.3g (%.3g against "
          "bf16-rounded inputs)\n",
          c.d, (long long)c.batch, (long long)c.queries, (long long)c.keys, c.scale,
          adversarial ? " (copies at issue, skewed warps)" : "", err, err_rounded);
    }
}

// What the fa2 kernel does not take goes elsewhere: K/V rows not 16-byte aligned (cp.async's pieces) run the wmma
// kernel (bit for bit), a head dim it has no instantiation for is refused by attention_fa2 with one line.
TEST_F(EmulatedCuda, Fa2AttentionLeavesWhatItCannotCopyToTheWmmaKernel) {
  const int64_t tokens = 40, d = 32;
  const auto q = random_values(tokens * d, 70), kv = random_values(tokens * d + 1, 71);
  std::vector<float> fa2(q.size(), kNaN), wmma(q.size(), kNaN);
  const float* k = kv.data() + 1;  // 4 bytes past an allocation's alignment
  ASSERT_FALSE(cuda::attention_fa2_aligned(cuda::split_head_operands(q.data(), k, k, fa2.data(), tokens, tokens, d)));
  cuda::attention(launch, q.data(), k, k, fa2.data(), 1, tokens, tokens, d, 0.5f, true);
  cuda::attention(launch, q.data(), k, k, wmma.data(), 1, tokens, tokens, d, 0.5f, true,
                  cuda::OwnAttentionKernel::Wmma);
  EXPECT_EQ(fa2, wmma);
  std::vector<float> q48(tokens * 48), out48(tokens * 48);
  EXPECT_THROW(
      cuda::attention_fa2(
          launch, cuda::split_head_operands(q48.data(), q48.data(), q48.data(), out48.data(), tokens, tokens, 48), 1, 1,
          tokens, tokens, 48, 0.5f),
      std::invalid_argument);
}

// The kernel on the packed qkv projection output in place ([views, tokens, 3 dim], head h's q, k, v at columns
// h d, dim + h d, 2 dim + h d) writing columns [4, 4 + dim) of a wider output: against the CPU attention of the
// split heads, and nothing outside its columns written.
TEST_F(EmulatedCuda, Fa2AttentionReadsThePackedQkvInPlace) {
  struct Packed {
    int64_t views, tokens, heads;
    int d;
  };
  for (const Packed& p : {Packed{2, 150, 3, 32}, Packed{1, 70, 2, 64}}) {
    const int64_t dim = p.heads * p.d, width = 3 * dim, out_width = dim + 8, out_col = 4;
    const auto qkv = random_values(p.views * p.tokens * width, 63);
    const int64_t n = p.views * p.heads * p.tokens * p.d;
    std::vector<float> q(n), k(n), v(n);
    for (int64_t i = 0; i < n; ++i) {  // i over [views, heads, tokens, d]
      const int64_t e = i % p.d, t = (i / p.d) % p.tokens, h = (i / (p.d * p.tokens)) % p.heads;
      const int64_t src = (i / (p.d * p.tokens * p.heads) * p.tokens + t) * width + h * p.d + e;
      q[i] = qkv[src], k[i] = qkv[src + dim], v[i] = qkv[src + 2 * dim];
    }
    const Shape shape{p.views * p.heads, p.tokens, p.d};
    Tensor tq = cpu->from_host(shape, q.data()), tk = cpu->from_host(shape, k.data()),
           tv = cpu->from_host(shape, v.data()), to = cpu->empty(shape);
    cpu->attention(tq, tk, tv, 0.3f, to);
    std::vector<float> out(p.views * p.tokens * out_width, kNaN), got(n);
    cuda::attention_packed(launch, qkv.data(), width, 0, dim, 2 * dim, out.data(), out_width, out_col, p.views,
                           p.tokens, p.heads, p.d, 0.3f);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = i % p.d, t = (i / p.d) % p.tokens, h = (i / (p.d * p.tokens)) % p.heads;
      got[i] = out[(i / (p.d * p.tokens * p.heads) * p.tokens + t) * out_width + out_col + h * p.d + e];
    }
    const double err = relative_error(got, cpu->to_host(to));
    EXPECT_LT(err, 1e-2) << "d " << p.d;
    EXPECT_GT(err, 1e-5);
    int64_t written_outside = 0;
    for (int64_t r = 0; r < p.views * p.tokens; ++r)
      for (int64_t col = 0; col < out_width; ++col)
        if ((col < out_col || col >= out_col + dim) && !std::isnan(out[r * out_width + col])) ++written_outside;
    EXPECT_EQ(written_outside, 0);
    std::printf("bf16 fa2 attention on packed qkv, %lld heads of %d: rel err %.3g\n", (long long)p.heads, p.d, err);
  }
}

// A parity case (fixture or reference case) through the GPU backend's code: fast weights and rendered pixels.
// The precisions a case runs at (each on the routes the function lists for it).
using Precisions = std::set<Precision>;
const Precisions kEveryPrecision{Precision::Fp32, Precision::Tf32, Precision::Bf16};
void check_case_through_gpu_code(const std::string& dir, const Precisions& precisions,
                                 FakeAttentionLibrary* library = nullptr);

TEST(EmulatedCudaBackend, OfficialFixtureThroughTheGpuBackendCode) {
  const std::string dir = test::env_path("LACT_FIXTURE_DIR");
  ASSERT_FALSE(dir.empty()) << "LACT_FIXTURE_DIR is not set";
  check_case_through_gpu_code(dir, kEveryPrecision);
}

// The linear-attention variants: the authors' V2 fixture and the PyTorch reference's cases for V1 (SwiGLU phi,
// weight norm), V3 (phi the identity, Newton-Schulz) and V6 (no Newton-Schulz), in fp32 and in bf16 (their
// projections and heads on bf16 activations, as a GPU runs them at --precision bf16) through both Newton-Schulz
// routes, and the full-attention baseline (global attention over the inputs' KV cache; `lact bench` times it beside
// LaCT). (test_parity runs every variant's case on the CPU; these three cover every code path of the update and the
// apply, and keep CI's time.)
TEST(EmulatedCudaBackend, VariantsThroughTheGpuBackendCode) {
  const std::string v2 = test::env_path("LACT_FIXTURE_V2_DIR");
  ASSERT_FALSE(v2.empty()) << "LACT_FIXTURE_V2_DIR is not set";
  check_case_through_gpu_code(v2, {Precision::Fp32, Precision::Bf16});
  const std::string cases = test::env_path("LACT_REFERENCE_CASES");
  int checked = 0;
  if (!cases.empty() && std::filesystem::is_directory(cases))
    for (const auto& entry : std::filesystem::directory_iterator(cases))
      if (std::set<std::string>{"variant_v1", "variant_v3", "variant_v6", "full_attention"}.count(
              entry.path().filename().string())) {
        SCOPED_TRACE(entry.path().string());
        check_case_through_gpu_code(entry.path().string(), {Precision::Fp32, Precision::Bf16});
        ++checked;
      }
  EXPECT_EQ(checked, 4) << "the variant reference cases were not generated in " << cases;
}

// The acceptance setting's model (lact_l24_d768_ttt2x: dim 768, 12 attention heads of 64, one fast-weight head of
// 768 with a hidden width of 1536, an MLP of 3072) cut to one layer, random weights, through the GPU backend's code at
// bf16 against the CPU backend's fp32 on the same weights: the fixtures are 32 to 64 wide, the benches a lent GPU runs
// first are these widths. The row kernels (norms, the heads' split, attention) meet the real widths on the low-rank
// route; the dense route's extra work is elementwise passes over 768 x 1536 matrices, whose kernels do not depend on
// the widths, and would take the emulator 40 s.
TEST(EmulatedCudaBackend, AcceptanceConfigWidthsThroughTheGpuBackendCode) {
  ModelConfig config = builtin_model_config("lact_l24_d768_ttt2x");
  config.layers = 1;
  const std::vector<PosedImage> views = test::random_views(2, 32, 32, 7);
  const std::vector<Camera> targets = {views[1].camera, test::random_views(3, 32, 32)[2].camera};
  auto cpu = make_cpu_backend(2);
  for (NewtonSchulzRoute route : {NewtonSchulzRoute::LowRank}) {
    ModelOptions options;
    options.newton_schulz = route;
    const Model reference(random_model_weights(config, *cpu, 3), *cpu, options);
    const SceneState want = reference.encode(views);
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
    const Model model(random_model_weights(config, be, 3), be, options);
    const SceneState got = model.encode(views);
    ASSERT_EQ(got.modules.size(), want.modules.size());
    double worst_weight = 0;
    for (size_t m = 0; m < got.modules.size(); ++m)
      for (size_t t = 0; t < got.modules[m].tensors.size(); ++t)
        worst_weight = std::max(worst_weight, relative_error(be.to_host(got.modules[m].tensors[t].second),
                                                             cpu->to_host(want.modules[m].tensors[t].second)));
    const std::vector<Image> images = model.render(got, targets), expected = reference.render(want, targets);
    double worst_pixel = 0;
    for (size_t i = 0; i < images.size(); ++i) {
      std::vector<double> e(expected[i].rgb.begin(), expected[i].rgb.end());
      worst_pixel = std::max(worst_pixel, max_abs_error(images[i].rgb, e));
    }
    EXPECT_GT(be.device().bf16_gemms, 0);
    EXPECT_LT(worst_weight, 1e-1) << "route " << int(route);
    EXPECT_LT(worst_pixel, 3e-2) << "route " << int(route);
    EXPECT_GT(worst_weight, 1e-5) << "bf16 storage should show";  // the run was not float32 throughout
    std::printf("lact_l24_d768_ttt2x, 1 layer, bf16 route %d: fast weights rel err %.3g, render max abs %.3g\n",
                int(route), worst_weight, worst_pixel);
  }
}

void check_case_through_gpu_code(const std::string& dir, const Precisions& precisions, FakeAttentionLibrary* library) {
  const SafetensorsFile expected(dir + "/expected.safetensors");
  const std::vector<PosedImage> views = test::fixture_inputs(expected);
  const int height = views[0].image.height, width = views[0].image.width;
  const std::vector<Camera> cameras = test::fixture_targets(expected);
  const auto reference = expected.read_floats("target_render_rendering");

  struct Run {
    NewtonSchulzRoute route;
    Precision precision;
    double weight_tolerance, render_tolerance;  // fast weights (relative Frobenius), pixels (max abs)
  };
  // fp32 to the fixture's tolerance through both Newton-Schulz routes; tf32 and bf16 products (and bf16
  // attention) on the default route, bf16 on the dense route too (its TTT products on bf16 heads), to the
  // tolerances test_parity holds a GPU to (measured here: tf32 3.0e-3 and 8.2e-4; bf16 with bf16 activations
  // 3.1e-2 and 7.1e-3, dense 1.0e-2 and 2.7e-3).
  for (const Run& run : {Run{NewtonSchulzRoute::Dense, Precision::Fp32, 1e-4, 1e-4},
                         Run{NewtonSchulzRoute::LowRank, Precision::Fp32, 1e-4, 1e-4},
                         Run{NewtonSchulzRoute::Auto, Precision::Tf32, 1e-2, 5e-3},
                         Run{NewtonSchulzRoute::Auto, Precision::Bf16, 1e-1, 3e-2},
                         Run{NewtonSchulzRoute::Dense, Precision::Bf16, 1e-1, 3e-2}}) {
    if (!precisions.count(run.precision)) continue;
    const NewtonSchulzRoute route = run.route;
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", run.precision);
    be.device().library = library;
    if (library) library->attach(be.device());
    ModelOptions options;
    options.newton_schulz = route;
    options.token_tile = route == NewtonSchulzRoute::Dense ? 40 : 16384;
    const Model model(load_model(dir + "/model.safetensors", be), be, options);
    ASSERT_TRUE(be.start_profiling());
    const int64_t gemms_before = be.device().gemms;
    const SceneState state = model.encode(views);
    const std::vector<OpProfile> profile = be.stop_profiling();
    int64_t profiled_gemms = 0;
    for (const OpProfile& p : profile) {
      EXPECT_GE(p.milliseconds, 0.0) << p.op;
      if (p.op == "gemm") profiled_gemms = p.calls;
    }
    EXPECT_EQ(profiled_gemms, be.device().gemms - gemms_before);  // every product timed, once
    ASSERT_FALSE(profile.empty());
    for (size_t i = 1; i < profile.size(); ++i) EXPECT_GE(profile[i - 1].milliseconds, profile[i].milliseconds);
    double worst_weight = 0;
    // The fast weights against the fixture's; the full-attention baseline's state is its KV cache, which the
    // reference does not record (its render checks it), one row per input token.
    const bool full_attention = !expected.contains("encode_block0_w1");
    for (size_t layer = 0; layer < state.modules.size(); ++layer)
      for (const auto& [w, tensor] : state.modules[layer].tensors) {
        const std::string name = "encode_block" + std::to_string(layer) + "_" + w;
        if (full_attention) {
          const int patch = model.config().patch_size;
          EXPECT_EQ(tensor.dim(1), int64_t(views.size()) * (height / patch) * (width / patch)) << name;
          continue;
        }
        worst_weight = std::max(worst_weight, relative_error(be.to_host(tensor), expected.read_floats(name)));
      }
    const std::vector<Image> images = model.render(state, cameras);
    std::vector<float> rendered;  // back to the fixture's [V, 3, H, W]
    for (const Image& img : images)
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < width * height; ++p) rendered.push_back(img.rgb[p * 3 + c]);
    const double worst = max_abs_error(rendered, reference);
    const std::string what = precision_name(run.precision) + " route " + std::to_string(int(route));
    EXPECT_LT(worst_weight, run.weight_tolerance) << what;
    EXPECT_LT(worst, run.render_tolerance) << what;
    EXPECT_GT(be.device().gemms, 0);
    // bf16 runs the window attention's and MLP's products on bf16 activations (Backend::activation_type).
    EXPECT_EQ(be.device().bf16_gemms > 0, run.precision == Precision::Bf16) << what;
    std::printf("%s %s: fast weights rel err <= %.3g%s, render max abs %.3g (%lld cuBLAS-shaped products)\n",
                std::filesystem::path(dir).filename().c_str(), what.c_str(), worst_weight,
                full_attention ? " (none: a KV cache)" : "", worst, (long long)be.device().gemms);
  }
}

// The recorded render path (CUDA graphs) against direct execution: the same images bit for bit, for the
// first cameras (recorded), new cameras (replayed with new poses), another view count (a second recording)
// and a new state (recorded again); host traffic while recording is refused.
TEST(EmulatedCudaBackend, RecordedRenderEqualsDirectRender) {
  const std::string dir = test::env_path("LACT_FIXTURE_DIR");
  ASSERT_FALSE(dir.empty()) << "LACT_FIXTURE_DIR is not set";
  const SafetensorsFile expected(dir + "/expected.safetensors");
  const std::vector<PosedImage> views = test::fixture_inputs(expected);
  const std::vector<Camera> targets = test::fixture_targets(expected);
  std::vector<Camera> first = {targets.at(0)}, second = {targets.at(1)};
  std::vector<Camera> pair = {first[0], second[0]};

  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Fp32);
  ModelOptions direct_options, recorded_options;
  direct_options.graphs = false;
  const Model direct(load_model(dir + "/model.safetensors", be), be, direct_options);
  const Model recorded(load_model(dir + "/model.safetensors", be), be, recorded_options);
  auto same = [](const std::vector<Image>& a, const std::vector<Image>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].rgb != b[i].rgb) return false;
    return true;
  };
  const SceneState state = direct.encode(views);
  EXPECT_TRUE(same(recorded.render(state, first), direct.render(state, first)));
  EXPECT_EQ(be.device().recordings, 1);
  EXPECT_TRUE(same(recorded.render(state, second), direct.render(state, second)));
  EXPECT_EQ(be.device().recordings, 1);  // replayed with the new pose
  EXPECT_TRUE(same(recorded.render(state, pair), direct.render(state, pair)));
  EXPECT_EQ(be.device().recordings, 2);  // two views at once: another recording
  const SceneState other = direct.encode({views[0], views[1]});
  EXPECT_TRUE(same(recorded.render(other, first), direct.render(other, first)));
  EXPECT_EQ(be.device().recordings, 3);  // the state changed
  EXPECT_GE(be.device().replays, 4);
  EXPECT_FALSE(same(recorded.render(other, first), recorded.render(state, first)));  // different states differ

  Tensor other_thread_tensor = be.empty({4});
  ASSERT_TRUE(be.begin_recording());
  Tensor t = be.empty({4});
  EXPECT_THROW(be.to_host(t), std::logic_error);
  EXPECT_THROW(be.synchronize(), std::logic_error);
  // Another thread's ops wait for the recording to end rather than land in it.
  std::atomic<bool> done{false};
  std::vector<float> seen;
  std::thread worker([&] {
    be.fill(other_thread_tensor, 3.0f);
    seen = be.to_host(other_thread_tensor);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());
  const std::unique_ptr<Recording> r = be.end_recording();
  worker.join();
  EXPECT_NE(r, nullptr);
  EXPECT_EQ(static_cast<const EmulatedRecording&>(*r).work.size(), 0u);  // the fill ran, it was not recorded
  EXPECT_EQ(seen, std::vector<float>(4, 3.0f));

  // A RecordingScope left by an exception ends the recording and releases the backend: another thread's op
  // runs (within 10 s: a leaked lock would hold it forever).
  try {
    RecordingScope scope(be);
    ASSERT_TRUE(scope.recording());
    be.to_host(t);  // host traffic while recording: throws
    FAIL() << "to_host while recording should throw";
  } catch (const std::logic_error&) {
  }
  auto after = std::async(std::launch::async, [&] {
    be.fill(other_thread_tensor, 5.0f);
    return be.to_host(other_thread_tensor);
  });
  ASSERT_EQ(after.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(after.get(), std::vector<float>(4, 5.0f));
}

// LPIPS (core/lpips.h: convolutions, pooling, column norms) through the GPU backend's code: the reference case's
// pairs up to 2000 pixels (odd sizes, 31-pixel sides, values to clamp) within 1e-5 of PyTorch, as
// tests/unit/core/test_lpips.cpp holds the CPU on all of them.
TEST(EmulatedCudaBackend, LpipsMatchesPyTorch) {
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Fp32);
  test::check_lpips_case(be, 2000);
}

// The attention op through a backend with the library: q, k, v random [batch, tokens, dim]; the relative error
// against the CPU backend's fp32 attention.
struct LibraryCase {
  int64_t batch, queries, keys, dim;
  float scale;
};
double backend_attention_error(Backend& be, const LibraryCase& c, unsigned seed) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  const auto q = random_values(c.batch * c.queries * c.dim, seed),
             k = random_values(c.batch * c.keys * c.dim, seed + 1),
             v = random_values(c.batch * c.keys * c.dim, seed + 2);
  Tensor cq = cpu->from_host({c.batch, c.queries, c.dim}, q.data()),
         ck = cpu->from_host({c.batch, c.keys, c.dim}, k.data()),
         cv = cpu->from_host({c.batch, c.keys, c.dim}, v.data()), co = cpu->empty({c.batch, c.queries, c.dim});
  cpu->attention(cq, ck, cv, c.scale, co);
  Tensor gq = be.from_host({c.batch, c.queries, c.dim}, q.data()),
         gk = be.from_host({c.batch, c.keys, c.dim}, k.data()), gv = be.from_host({c.batch, c.keys, c.dim}, v.data()),
         go = be.empty({c.batch, c.queries, c.dim});
  be.attention(gq, gk, gv, c.scale, go);
  return relative_error(be.to_host(go), cpu->to_host(co));
}

// bf16 attention goes through the library, in chunks of the batch that keep the staging within its budget (each
// chunk's operands at their own offsets), and agrees with the CPU's fp32 attention to bf16's precision.
TEST(EmulatedCudaBackend, Bf16AttentionThroughTheLibraryInChunks) {
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
  FakeAttentionLibrary library(be.device());
  be.device().library = &library;
  EXPECT_EQ(cuda::attention_path(be), "fake 1.0");
  const LibraryCase c{5, 70, 130, 64, 0.3f};
  // 2 entries of 70 and 130 rows of 64 stage 2 x (2 x 8960 + 2 x 16640) bytes = 102,400: chunks 2, 2, 1.
  be.set_attention_staging_budget(102400);
  testing::internal::CaptureStderr();
  const double err = backend_attention_error(be, c, 40);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // nothing fell back
  EXPECT_LT(err, 1e-2);
  EXPECT_GT(err, 1e-5) << "bf16 rounding should show";
  ASSERT_EQ(library.shapes.size(), 3u);
  EXPECT_EQ(library.shapes[0], (cuda::SdpaShape{2, 70, 130, 64}));
  EXPECT_EQ(library.shapes[1], (cuda::SdpaShape{2, 70, 130, 64}));
  EXPECT_EQ(library.shapes[2], (cuda::SdpaShape{1, 70, 130, 64}));
  EXPECT_EQ(cuda::attention_path(be), "fake 1.0");
  std::printf("bf16 attention through the library in 3 chunks: rel err %.3g\n", err);
}

// A shape the library refuses, a library that fails, no library, LACT_ATTENTION=own and fp32: our kernels run
// instead, the result is as right, and the reason is said on stderr once (not for own, which asked for it).
TEST(EmulatedCudaBackend, AttentionFallsBackToOurKernel) {
  const LibraryCase c{3, 40, 75, 32, 0.5f};
  {
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
    FakeAttentionLibrary library(be.device());
    be.device().library = &library;
    library.refuse_dim = 32;
    testing::internal::CaptureStderr();
    EXPECT_LT(backend_attention_error(be, c, 41), 1e-2);
    EXPECT_LT(backend_attention_error(be, c, 42), 1e-2);
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "lact: bf16 attention through lact's own kernel: fake 1.0 refuses this shape: head dim 32 refused by the "
              "test\n");
    EXPECT_TRUE(library.shapes.empty());
    EXPECT_EQ(cuda::attention_path(be), "own fa2 (fake 1.0 refuses this shape: head dim 32 refused by the test)");
  }
  {
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
    FakeAttentionLibrary library(be.device());
    be.device().library = &library;
    library.fail_runs = true;
    testing::internal::CaptureStderr();
    EXPECT_LT(backend_attention_error(be, c, 43), 1e-2);
    EXPECT_LT(backend_attention_error(be, c, 44), 1e-2);
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "lact: bf16 attention through lact's own kernel: fake 1.0 failed: the test made it fail\n");
    EXPECT_EQ(library.runs, 1);  // not tried again
    EXPECT_EQ(cuda::attention_path(be), "own fa2 (fake 1.0 failed: the test made it fail)");
  }
  for (const std::string& unavailable :
       {std::string("cannot open libcudnn.so.9 (...)"), std::string(cuda::kAttentionChosenOwn)}) {
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
    be.device().unavailable = unavailable;
    testing::internal::CaptureStderr();
    EXPECT_LT(backend_attention_error(be, c, 45), 1e-2);
    const std::string said = testing::internal::GetCapturedStderr();
    EXPECT_EQ(said, unavailable == cuda::kAttentionChosenOwn
                        ? ""
                        : "lact: bf16 attention through lact's own kernel: " + unavailable + "\n");
    EXPECT_EQ(cuda::attention_path(be), "own fa2 (" + unavailable + ")");
  }
  {
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Fp32);
    FakeAttentionLibrary library(be.device());
    be.device().library = &library;
    EXPECT_LT(backend_attention_error(be, c, 46), 1e-5);
    EXPECT_EQ(library.prepares, 0);
    EXPECT_EQ(cuda::attention_path(be), "own (fp32: the library runs bf16 only)");
  }
}

// LACT_ATTENTION=wmma: the backend runs the older wmma kernel (bit for bit what it computes called directly, not
// what the FlashAttention-2-class one does), says nothing on stderr, and names it in its path.
TEST(EmulatedCudaBackend, LactAttentionWmmaRunsTheOlderKernel) {
  ::setenv("LACT_ATTENTION", "wmma", 1);
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
  ::unsetenv("LACT_ATTENTION");
  be.device().unavailable = cuda::kAttentionChosenWmma;
  const int64_t batch = 2, tokens = 50, d = 32;
  const auto q = random_values(batch * tokens * d, 48), k = random_values(batch * tokens * d, 49),
             v = random_values(batch * tokens * d, 50);
  Tensor gq = be.from_host({batch, tokens, d}, q.data()), gk = be.from_host({batch, tokens, d}, k.data()),
         gv = be.from_host({batch, tokens, d}, v.data()), go = be.empty({batch, tokens, d});
  testing::internal::CaptureStderr();
  be.attention(gq, gk, gv, 0.4f, go);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cuda::attention_path(be), "own wmma (LACT_ATTENTION=wmma)");
  std::vector<float> wmma(q.size()), fa2(q.size());
  cuda_emulation::Launcher launch;
  cuda::attention(launch, q.data(), k.data(), v.data(), wmma.data(), batch, tokens, tokens, d, 0.4f, true,
                  cuda::OwnAttentionKernel::Wmma);
  cuda::attention(launch, q.data(), k.data(), v.data(), fa2.data(), batch, tokens, tokens, d, 0.4f, true);
  EXPECT_EQ(be.to_host(go), wmma);
  EXPECT_NE(wmma, fa2);
}

// A recording that meets a shape the library has not prepared is discarded (preparing cannot be captured): the
// caller runs directly, which prepares it; the next recording captures the library's run, and replaying it
// computes what the direct call did.
TEST(EmulatedCudaBackend, RecordingWaitsForAPreparedLibraryShape) {
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
  FakeAttentionLibrary library(be.device());
  be.device().library = &library;
  const int64_t batch = 2, tokens = 33, dim = 16;
  const auto values = random_values(batch * tokens * dim, 47);
  Tensor q = be.from_host({batch, tokens, dim}, values.data()), out = be.empty({batch, tokens, dim});
  auto attend = [&] { be.attention(q, q, q, 0.25f, out); };
  ASSERT_TRUE(be.begin_recording());
  attend();
  EXPECT_EQ(be.end_recording(), nullptr);
  EXPECT_EQ(library.runs, 0);
  attend();  // directly: prepares the shape and runs
  EXPECT_EQ(library.runs, 1);
  const std::vector<float> direct = be.to_host(out);
  be.fill(out, 0.0f);
  ASSERT_TRUE(be.begin_recording());
  attend();
  const std::unique_ptr<Recording> recording = be.end_recording();
  ASSERT_NE(recording, nullptr);
  EXPECT_EQ(library.runs, 2);  // queued into the recording
  EXPECT_EQ(library.shapes.size(), 2u);
  EXPECT_EQ(be.to_host(out), std::vector<float>(size_t(batch * tokens * dim), 0.0f));  // nothing ran yet
  be.replay(*recording);
  EXPECT_EQ(be.to_host(out), direct);
}

// Backend::attention_packed through the GPU backend code, and today's path on the same backend (split_heads of q, k
// and v, attention, merge_heads), for random packed qkv [views, tokens, 3 heads d].
struct PackedResults {
  std::vector<float> packed, split, cpu;
};
PackedResults packed_and_split(Backend& be, int64_t views, int64_t tokens, int64_t heads, int64_t d, float scale,
                               unsigned seed) {
  const auto qkv = random_values(views * tokens * 3 * heads * d, seed);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  const Shape rows{views, tokens, 3 * heads * d}, merged{views, tokens, heads * d}, batched{views * heads, tokens, d};
  Tensor cqkv = cpu->from_host(rows, qkv.data()), cout = cpu->empty(merged);
  cpu->attention_packed(cqkv, heads, d, scale, cout);
  Tensor gqkv = be.from_host(rows, qkv.data()), gout = be.empty(merged);
  be.attention_packed(gqkv, heads, d, scale, gout);
  Tensor q = be.empty(batched), k = be.empty(batched), v = be.empty(batched), o = be.empty(batched),
         split = be.empty(merged);
  be.split_heads(gqkv, 0, heads, d, q);
  be.split_heads(gqkv, heads * d, heads, d, k);
  be.split_heads(gqkv, 2 * heads * d, heads, d, v);
  be.attention(q, k, v, scale, o);
  be.merge_heads(o.reshape({views, heads, tokens, d}), split);
  return {be.to_host(gout), be.to_host(split), cpu->to_host(cout)};
}

// The packed attention on each path the backend has, against the CPU backend's packed attention (fp32 1e-5
// relative, bf16 1e-2 and visibly rounded) and against today's path: fp32, our fa2 kernel reading the packed rows
// in place, LACT_ATTENTION=wmma and a head dim fa2 has no instantiation for (both split the heads internally) give
// today's values bit for bit; the library gets the packed layout itself (one shape per chunk of views, heads set).
TEST(EmulatedCudaBackend, AttentionPackedOnEveryPathMatchesTheCpu) {
  const int64_t views = 3, tokens = 70, heads = 3;
  struct Path {
    const char* name;
    Precision precision;
    const char* choice;  // LACT_ATTENTION
    int64_t d;
    double tolerance;
  };
  for (const Path& p :
       {Path{"fp32", Precision::Fp32, "", 32, 1e-5}, Path{"fa2", Precision::Bf16, "own", 32, 1e-2},
        Path{"wmma", Precision::Bf16, "wmma", 32, 1e-2}, Path{"d 24", Precision::Bf16, "own", 24, 1e-5}}) {
    ::setenv("LACT_ATTENTION", p.choice, 1);
    cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", p.precision);
    ::unsetenv("LACT_ATTENTION");
    be.device().unavailable = p.choice == std::string("wmma") ? cuda::kAttentionChosenWmma : cuda::kAttentionChosenOwn;
    const PackedResults r = packed_and_split(be, views, tokens, heads, p.d, 0.3f, 81);
    const double err = relative_error(r.packed, r.cpu);
    EXPECT_LT(err, p.tolerance) << p.name;
    EXPECT_EQ(r.packed, r.split) << p.name;
    std::printf("packed attention, %s: rel err %.3g against the cpu (%s)\n", p.name, err,
                cuda::attention_path(be).c_str());
  }
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Bf16);
  FakeAttentionLibrary library(be.device());
  be.device().library = &library;
  // A view of 70 tokens stages 70 x 288 + 70 x 96 bf16 = 53,760 bytes: 2 views (107,520 and the padding) a chunk.
  be.set_attention_staging_budget(120000);
  testing::internal::CaptureStderr();
  const PackedResults r = packed_and_split(be, views, tokens, heads, 32, 0.3f, 82);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  const double err = relative_error(r.packed, r.cpu);
  EXPECT_LT(err, 1e-2);
  EXPECT_GT(err, 1e-5) << "bf16 rounding should show";
  EXPECT_LT(relative_error(r.packed, r.split), 1e-2);
  ASSERT_GE(library.shapes.size(), 2u);
  EXPECT_EQ(library.shapes[0], (cuda::SdpaShape{2, tokens, tokens, 32, heads}));
  EXPECT_EQ(library.shapes[1], (cuda::SdpaShape{1, tokens, tokens, 32, heads}));
  EXPECT_EQ(cuda::attention_path(be), "fake 1.0");
  std::printf("packed attention through the library in 2 chunks: rel err %.3g\n", err);
}

// The TTT layer's heads in one pass through the GPU backend's code: the CPU's op on the same values (float32
// rounding apart: the device's expf against the CPU's own exp), and bit for bit the device's silu + split_heads +
// l2_normalize it replaces, on every shape of heads_cases() (head dims 1 to 768, no norm).
TEST(EmulatedCudaBackend, SplitHeadsSiluMatchesTheCpuAndItsOwnSequence) {
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Fp32);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  for (const test::HeadsCase& c : test::heads_cases()) {
    const auto x = random_values(size_t(c.views * c.tokens * c.width), unsigned(c.head_dim), 3.0f);
    const test::HeadsRun run = test::run_split_heads_silu(be, x, c, DType::F32, DType::F32);
    const test::HeadsRun reference = test::run_split_heads_silu(*cpu, x, c, DType::F32, DType::F32);
    EXPECT_TRUE(test::same_bits(run.fused, run.sequence)) << "head_dim " << c.head_dim;
    EXPECT_LT(relative_error(run.fused, reference.fused), 1e-6) << "head_dim " << c.head_dim;
  }
}

// Split-K's choice (gemm_plan.h): the TTT update's products over 196,608 tokens split until the output has about
// two waves of tiles, short reductions and outputs that fill the GPU do not, and the slice count stays within its
// bounds (slices of at least 4096, at most 16, partial outputs within 64 MiB).
TEST(SplitK, ChosenOnlyForLongReductionsIntoSmallOutputs) {
  auto slices = [](int64_t m, int64_t n, int64_t k, int64_t batch) {
    return cuda::plan_split_k(m, n, k, batch).slices;
  };
  EXPECT_EQ(slices(768, 3072, 196608, 1), 2);  // [dW0|dW2]: 144 tiles
  EXPECT_EQ(slices(1536, 768, 196608, 1), 4);  // dW1: 72 tiles
  EXPECT_EQ(cuda::plan_split_k(1536, 768, 196608, 1).slice_k, 49152);
  EXPECT_EQ(slices(768, 3072, 16383, 1), 1);      // short reduction
  EXPECT_EQ(slices(4096, 1536, 196608, 1), 1);    // 384 tiles fill the GPU
  EXPECT_EQ(slices(64, 64, 20000, 1), 4);         // slices of at least 4096
  EXPECT_EQ(slices(64, 64, 1 << 20, 2), 16);      // at most 16
  EXPECT_EQ(slices(8192, 16, 1 << 20, 1), 5);     // 64 tiles: 5 x 64 reach 264
  EXPECT_EQ(slices(2048, 2048, 1 << 20, 4), 1);   // 1024 tiles over 4 heads
  EXPECT_EQ(slices(16, 1 << 20, 1 << 20, 1), 1);  // 8192 tiles
  EXPECT_TRUE(cuda::parse_split_k(nullptr));
  EXPECT_TRUE(cuda::parse_split_k("1"));
  EXPECT_FALSE(cuda::parse_split_k("0"));
  EXPECT_THROW(cuda::parse_split_k("off"), std::invalid_argument);
}

// Products with long reductions through the GPU backend code take the split-K path (the device's GEMM count says
// so) and equal the CPU backend's within float rounding: every transpose, one matrix and several (shared A as the
// TTT layer's keys), alpha and beta, a remainder in the last slice; with LACT_SPLIT_K=0 one call as before.
TEST(SplitK, ProductsThroughTheGpuCodeMatchTheCpu) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  const int64_t m = 40, n = 24, k = 16385;  // 4 slices of 4096, the last 4097
  for (int64_t batch : {1, 3})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f}) {
          cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Fp32);
          const auto a = random_values(m * k * batch, 40), b = random_values(k * n * batch, 41),
                     c0 = random_values(m * n * batch, 42);
          const Shape as = ta ? Shape{batch, k, m} : Shape{batch, m, k},
                      bs = tb ? Shape{batch, n, k} : Shape{batch, k, n};
          Tensor ga = be.from_host(as, a.data()), gb = be.from_host(bs, b.data()),
                 gc = be.from_host({batch, m, n}, c0.data());
          Tensor ca = cpu->from_host(as, a.data()), cb = cpu->from_host(bs, b.data()),
                 cc = cpu->from_host({batch, m, n}, c0.data());
          const int64_t lda = ta ? m : k, ldb = tb ? k : n;
          be.gemm(ta, tb, m, n, k, 0.5f, {ga.data(), lda, m * k}, {gb.data(), ldb, k * n}, beta, gc.data(), n, m * n,
                  batch);
          cpu->gemm(ta, tb, m, n, k, 0.5f, {ca.data(), lda, m * k}, {cb.data(), ldb, k * n}, beta, cc.data(), n, m * n,
                    batch);
          EXPECT_LT(relative_error(be.to_host(gc), cpu->to_host(cc)), 1e-5)
              << "batch " << batch << " ta " << ta << " tb " << tb << " beta " << beta;
          EXPECT_EQ(be.device().gemms, batch == 1 ? 2 : 4);  // the equal slices batched, the last alone; or each
        }
  // A shared by the batch entries (stride 0).
  cuda::DeviceBackend<EmulatedDevice> be("cuda-emulated", Precision::Fp32);
  const auto a = random_values(k * m, 43), b = random_values(2 * k * n, 44);
  Tensor ga = be.from_host({k, m}, a.data()), gb = be.from_host({2, k, n}, b.data()), gc = be.empty({2, m, n});
  Tensor ca = cpu->from_host({k, m}, a.data()), cb = cpu->from_host({2, k, n}, b.data()), cc = cpu->empty({2, m, n});
  be.gemm(true, false, m, n, k, 1.0f, {ga.data(), m, 0}, {gb.data(), n, k * n}, 0.0f, gc.data(), n, m * n, 2);
  cpu->gemm(true, false, m, n, k, 1.0f, {ca.data(), m, 0}, {cb.data(), n, k * n}, 0.0f, cc.data(), n, m * n, 2);
  EXPECT_LT(relative_error(be.to_host(gc), cpu->to_host(cc)), 1e-5) << "shared A";

  setenv("LACT_SPLIT_K", "0", 1);
  cuda::DeviceBackend<EmulatedDevice> whole("cuda-emulated", Precision::Fp32);
  unsetenv("LACT_SPLIT_K");
  Tensor wa = whole.from_host({k, m}, a.data()), wb = whole.from_host({2, k, n}, b.data()), wc = whole.empty({2, m, n});
  whole.gemm(true, false, m, n, k, 1.0f, {wa.data(), m, 0}, {wb.data(), n, k * n}, 0.0f, wc.data(), n, m * n, 2);
  EXPECT_EQ(whole.device().gemms, 1);
  EXPECT_LT(relative_error(whole.to_host(wc), cpu->to_host(cc)), 1e-5) << "LACT_SPLIT_K=0";
}

// The official fixture at bf16 through the GPU backend code with every attention through the library: within the
// bf16 bounds test_parity holds a GPU to.
TEST(EmulatedCudaBackend, OfficialFixtureAtBf16ThroughTheAttentionLibrary) {
  const std::string dir = test::env_path("LACT_FIXTURE_DIR");
  ASSERT_FALSE(dir.empty()) << "LACT_FIXTURE_DIR is not set";
  EmulatedDevice device;  // attached to each backend's own device in check_case_through_gpu_code
  FakeAttentionLibrary library(device);
  testing::internal::CaptureStderr();
  check_case_through_gpu_code(dir, {Precision::Bf16}, &library);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_GT(library.shapes.size(), 0u);
}

}  // namespace
}  // namespace lact
