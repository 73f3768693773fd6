// Every backend op against a naive double-precision loop, on random inputs.
// Tolerances: 1e-5 relative for products and reductions of O(100) terms in float32, 1e-6 absolute
// for elementwise ops (float32 rounding of O(1) values).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <tuple>

#include "core/tokens.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cpu/dnnl_gemm.h"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/bf16_storage.h"
#ifdef LACT_HAVE_CUDA
#include "kernels/cuda/cublas_library.h"
#endif
#include "tests/common/conv_reference.h"
#include "tests/common/packed_columns.h"
#include "tests/common/split_heads_silu_cases.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::max_abs_error;
using test::random_values;
using test::relative_error;

class BackendOps : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    if (!backend_available(GetParam(), &why)) GTEST_SKIP() << GetParam() << ": " << why;
    be = make_backend(GetParam(), 2);
  }
  Tensor upload(const Shape& shape, const std::vector<float>& v) { return be->from_host(shape, v.data()); }
  std::unique_ptr<Backend> be;
};

// C[b] = alpha op(A[b]) op(B[b]) + beta C[b] in double.
std::vector<double> naive_gemm(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                               const std::vector<float>& a, const std::vector<float>& b, double beta,
                               const std::vector<float>& c) {
  std::vector<double> out(c.size());
  for (int64_t x = 0; x < batch; ++x)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double av = ta ? a[x * m * k + p * m + i] : a[x * m * k + i * k + p];
          const double bv = tb ? b[x * k * n + j * k + p] : b[x * k * n + p * n + j];
          sum += av * bv;
        }
        out[x * m * n + i * n + j] = alpha * sum + beta * c[x * m * n + i * n + j];
      }
  return out;
}

TEST_P(BackendOps, GemmEveryLayoutBatchedWithAlphaBeta) {
  const int64_t batch = 3, m = 37, n = 29, k = 53;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const auto a = random_values(batch * m * k, 1), b = random_values(batch * k * n, 2),
                 c = random_values(batch * m * n, 3);
      Tensor ta_ = upload(ta ? Shape{batch, k, m} : Shape{batch, m, k}, a);
      Tensor tb_ = upload(tb ? Shape{batch, n, k} : Shape{batch, k, n}, b);
      Tensor tc = upload({batch, m, n}, c);
      matmul(*be, ta_, ta, tb_, tb, tc, 0.75f, -0.5f);
      const auto expected = naive_gemm(ta, tb, batch, m, n, k, 0.75, a, b, -0.5, c);
      EXPECT_LT(relative_error(be->to_host(tc), expected), 1e-5) << "ta=" << ta << " tb=" << tb;
    }
}

TEST_P(BackendOps, GemmSharedOperandAndLinear) {
  const int64_t batch = 2, m = 16, n = 24, k = 40;
  const auto a = random_values(batch * m * k, 4), w = random_values(n * k, 5);
  Tensor x = upload({batch, m, k}, a), weight = upload({n, k}, w), y = be->empty({batch, m, n});
  matmul(*be, x, false, weight, true, y);  // the 2-D weight is shared by every batch entry
  std::vector<float> w_batched(w);
  w_batched.insert(w_batched.end(), w.begin(), w.end());
  const auto expected =
      naive_gemm(false, true, batch, m, n, k, 1.0, a, w_batched, 0.0, std::vector<float>(batch * m * n));
  EXPECT_LT(relative_error(be->to_host(y), expected), 1e-5);
  Tensor y2 = be->empty({batch * m, n});
  linear(*be, x.reshape({batch * m, k}), weight, y2);
  EXPECT_LT(relative_error(be->to_host(y2), expected), 1e-5);
}

// linear_add: y += x W^T in the product (beta 1), as each block adds its output into the residual stream; the old
// contents of y count once, and a second call adds again.
TEST_P(BackendOps, LinearAddAddsTheProductIntoY) {
  const int64_t rows = 45, in = 36, out = 28;
  const auto x = random_values(rows * in, 41), w = random_values(out * in, 42, 0.5f),
             y0 = random_values(rows * out, 43);
  Tensor tx = upload({rows, in}, x), tw = upload({out, in}, w), ty = upload({rows, out}, y0);
  linear_add(*be, tx, tw, ty);
  std::vector<double> once(y0.size()), twice(y0.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < in; ++i) sum += double(x[r * in + i]) * w[o * in + i];
      once[r * out + o] = y0[r * out + o] + sum;
      twice[r * out + o] = y0[r * out + o] + 2 * sum;
    }
  EXPECT_LT(relative_error(be->to_host(ty), once), 1e-5);
  linear_add(*be, tx, tw, ty);
  EXPECT_LT(relative_error(be->to_host(ty), twice), 1e-5);
}

TEST_P(BackendOps, LayerNormAndRmsNorm) {
  const int64_t rows = 19, cols = 48, group = 16;
  const auto x = random_values(rows * cols, 6, 3.0f), w = random_values(cols, 7), wg = random_values(group, 8);
  Tensor tx = upload({rows, cols}, x), tw = upload({cols}, w), twg = upload({group}, wg), ty = be->empty({rows, cols});
  be->layer_norm(tx, tw, 1e-5f, ty);
  std::vector<double> expected(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c] / double(cols);
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean) / double(cols);
    for (int64_t c = 0; c < cols; ++c) expected[r * cols + c] = (x[r * cols + c] - mean) / std::sqrt(var + 1e-5) * w[c];
  }
  EXPECT_LT(max_abs_error(be->to_host(ty), expected), 1e-5);

  be->rms_norm(tx, twg, group, 1e-5f, ty);
  for (int64_t g = 0; g < rows * cols / group; ++g) {
    double ms = 0;
    for (int64_t i = 0; i < group; ++i) ms += double(x[g * group + i]) * x[g * group + i] / double(group);
    for (int64_t i = 0; i < group; ++i) expected[g * group + i] = x[g * group + i] / std::sqrt(ms + 1e-5) * wg[i];
  }
  EXPECT_LT(max_abs_error(be->to_host(ty), expected), 1e-5);

  be->l2_normalize(tx, group, 1e-5f);  // eps added to the norm, not under the root
  for (int64_t g = 0; g < rows * cols / group; ++g) {
    double ss = 0;
    for (int64_t i = 0; i < group; ++i) ss += double(x[g * group + i]) * x[g * group + i];
    for (int64_t i = 0; i < group; ++i) expected[g * group + i] = x[g * group + i] / (std::sqrt(ss) + 1e-5);
  }
  EXPECT_LT(max_abs_error(be->to_host(tx), expected), 1e-6);
}

TEST_P(BackendOps, Activations) {
  const auto x = random_values(1000, 9, 4.0f);
  std::vector<double> silu(x.size()), gelu(x.size()), sigmoid(x.size()), softplus(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    silu[i] = v / (1 + std::exp(-v));
    gelu[i] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    sigmoid[i] = 1 / (1 + std::exp(-v));
    softplus[i] = std::log1p(std::exp(v - 4.600166));
  }
  Tensor t = upload({1000}, x);
  be->silu(t);
  EXPECT_LT(max_abs_error(be->to_host(t), silu), 1e-5);
  t = upload({1000}, x);
  be->gelu(t);
  EXPECT_LT(max_abs_error(be->to_host(t), gelu), 1e-5);
  t = upload({1000}, x);
  be->sigmoid(t);
  EXPECT_LT(max_abs_error(be->to_host(t), sigmoid), 1e-6);
  t = upload({1000}, x);
  be->softplus(t, -4.600166f);
  EXPECT_LT(max_abs_error(be->to_host(t), softplus), 1e-6);
}

TEST_P(BackendOps, ElementwiseAndRowScaling) {
  const int64_t batch = 2, rows = 5, cols = 7;
  const auto x = random_values(batch * rows * cols, 10), y = random_values(batch * rows * cols, 11);
  const auto s = random_values(3 * rows * batch, 12);
  Tensor tx = upload({batch, rows, cols}, x), ty = upload({batch, rows, cols}, y);
  be->axpby(ty, 2.0f, tx, -3.0f);
  std::vector<double> expected(y.size());
  for (size_t i = 0; i < y.size(); ++i) expected[i] = 2.0 * x[i] - 3.0 * y[i];
  EXPECT_LT(max_abs_error(be->to_host(ty), expected), 1e-5);
  be->add(ty, tx);
  for (size_t i = 0; i < y.size(); ++i) expected[i] += x[i];
  EXPECT_LT(max_abs_error(be->to_host(ty), expected), 1e-5);
  // scale of (batch b, row r) at s[b * 1 + r * 3], as the TTT layer reads its lr channels
  const Tensor ts = upload({int64_t(s.size())}, s);
  be->scale_rows(tx, ts.data(), 1, 3);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        expected[(b * rows + r) * cols + c] = double(x[(b * rows + r) * cols + c]) * s[b + r * 3];
  EXPECT_LT(max_abs_error(be->to_host(tx), expected), 1e-6);
}

TEST_P(BackendOps, SplitAndMergeHeads) {
  const int64_t views = 2, tokens = 6, heads = 3, head_dim = 4, width = 3 * heads * head_dim;
  const auto x = random_values(views * tokens * width, 13);
  Tensor src = upload({views, tokens, width}, x), dst = be->empty({views, heads, tokens, head_dim});
  be->split_heads(src, heads * head_dim, heads, head_dim, dst);  // the "k" third
  const auto got = be->to_host(dst);
  std::vector<double> expected(got.size());
  for (int64_t v = 0; v < views; ++v)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t d = 0; d < head_dim; ++d)
          expected[((v * heads + h) * tokens + t) * head_dim + d] =
              x[(v * tokens + t) * width + heads * head_dim + h * head_dim + d];
  EXPECT_EQ(max_abs_error(got, expected), 0.0);
  Tensor merged = be->empty({views, tokens, heads * head_dim});
  be->merge_heads(dst, merged);
  const auto back = be->to_host(merged);
  for (int64_t v = 0; v < views; ++v)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < heads * head_dim; ++c)
        ASSERT_EQ(back[(v * tokens + t) * heads * head_dim + c], x[(v * tokens + t) * width + heads * head_dim + c]);
}

// softmax(q k^T * scale) v per batch entry, in double.
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, int64_t batch, int64_t queries, int64_t keys,
                                    int64_t dim, double scale) {
  std::vector<double> out(batch * queries * dim), p(keys);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < queries; ++i) {
      double peak = -1e300, sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double s = 0;
        for (int64_t d = 0; d < dim; ++d) s += double(q[(b * queries + i) * dim + d]) * k[(b * keys + j) * dim + d];
        peak = std::max(peak, p[j] = s * scale);
      }
      for (int64_t j = 0; j < keys; ++j) sum += (p[j] = std::exp(p[j] - peak));
      for (int64_t d = 0; d < dim; ++d) {
        double o = 0;
        for (int64_t j = 0; j < keys; ++j) o += p[j] / sum * v[(b * keys + j) * dim + d];
        out[(b * queries + i) * dim + d] = o;
      }
    }
  return out;
}

TEST_P(BackendOps, AttentionMatchesSoftmaxLoop) {
  // 700 queries: more than one query tile of the CPU kernel.
  const int64_t batch = 2, queries = 700, keys = 700, dim = 8;
  const auto q = random_values(batch * queries * dim, 14), k = random_values(batch * keys * dim, 15),
             v = random_values(batch * keys * dim, 16);
  Tensor tq = upload({batch, queries, dim}, q), tk = upload({batch, keys, dim}, k), tv = upload({batch, keys, dim}, v);
  Tensor out = be->empty({batch, queries, dim});
  const double scale = 1.0 / std::sqrt(8.0);
  be->attention(tq, tk, tv, static_cast<float>(scale), out);
  EXPECT_LT(max_abs_error(be->to_host(out), naive_attention(q, k, v, batch, queries, keys, dim, scale)), 1e-5);
}

// Values wider than the keys (the op allows it; the CUDA kernels refuse it with one line): each output row is the
// softmax-weighted sum of value rows of their own width, against the double loop.
TEST_P(BackendOps, AttentionWithValuesWiderThanKeys) {
  if (GetParam() != "cpu") GTEST_SKIP() << "the cuda kernels take value dim = query dim";
  const int64_t batch = 2, queries = 30, keys = 41, dim = 8, value_dim = 12;
  const auto q = random_values(batch * queries * dim, 21), k = random_values(batch * keys * dim, 22),
             v = random_values(batch * keys * value_dim, 23);
  Tensor tq = upload({batch, queries, dim}, q), tk = upload({batch, keys, dim}, k),
         tv = upload({batch, keys, value_dim}, v), out = be->empty({batch, queries, value_dim});
  be->attention(tq, tk, tv, 0.5f, out);
  std::vector<double> expected(batch * queries * value_dim), p(keys);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < queries; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double s = 0;
        for (int64_t d = 0; d < dim; ++d) s += double(q[(b * queries + i) * dim + d]) * k[(b * keys + j) * dim + d];
        sum += (p[j] = std::exp(0.5 * s));
      }
      for (int64_t e = 0; e < value_dim; ++e) {
        double o = 0;
        for (int64_t j = 0; j < keys; ++j) o += p[j] / sum * v[(b * keys + j) * value_dim + e];
        expected[(b * queries + i) * value_dim + e] = o;
      }
    }
  EXPECT_LT(max_abs_error(be->to_host(out), expected), 1e-5);
}

// Views of thousands of tokens (8040 at 536x960): the CPU kernel's query tiles shrink to keep the scores in cache
// and its work items run in parallel or, fewer than the threads, one at a time. Both, against the double loop,
// with sharp softmaxes too (scores spread over hundreds: the exp far into its negative range).
TEST_P(BackendOps, AttentionOverLongViews) {
  const int64_t keys = 5000, dim = 16;
  for (const auto& [batch, queries, scale] : {std::tuple{2, 130, 0.25}, {1, 40, 0.25}, {2, 97, 40.0}}) {
    const auto q = random_values(batch * queries * dim, 70), k = random_values(batch * keys * dim, 71),
               v = random_values(batch * keys * dim, 72);
    Tensor tq = upload({batch, queries, dim}, q), tk = upload({batch, keys, dim}, k),
           tv = upload({batch, keys, dim}, v), out = be->empty({batch, queries, dim});
    be->fill(out, NAN);
    be->attention(tq, tk, tv, static_cast<float>(scale), out);
    const double err = relative_error(be->to_host(out), naive_attention(q, k, v, batch, queries, keys, dim, scale));
    EXPECT_LT(err, 1e-5) << batch << " x " << queries << " queries, scale " << scale;
  }
}

// A NaN in the input comes out as NaN (the run's non-finite checks then name it), never as a finite value or a
// crash: in a score row of the attention, and through the activations.
TEST_P(BackendOps, NanPropagatesThroughAttentionAndActivations) {
  const int64_t queries = 3, keys = 40, dim = 8;
  auto q = random_values(queries * dim, 80);
  const auto k = random_values(keys * dim, 81), v = random_values(keys * dim, 82);
  q[1 * dim + 2] = NAN;  // query 1
  Tensor tq = upload({1, queries, dim}, q), tk = upload({1, keys, dim}, k), tv = upload({1, keys, dim}, v),
         out = be->empty({1, queries, dim});
  be->attention(tq, tk, tv, 0.5f, out);
  const std::vector<float> o = be->to_host(out);
  for (int64_t d = 0; d < dim; ++d) {
    EXPECT_TRUE(std::isnan(o[1 * dim + d]));
    EXPECT_TRUE(std::isfinite(o[0 * dim + d]) && std::isfinite(o[2 * dim + d]));
  }
  for (const auto& op : std::vector<std::function<void(Tensor&)>>{
           [&](Tensor& t) { be->gelu(t); }, [&](Tensor& t) { be->silu(t); }, [&](Tensor& t) { be->sigmoid(t); }}) {
    Tensor t = upload({1, 1, 3}, {0.5f, NAN, -0.5f});
    op(t);
    const std::vector<float> r = be->to_host(t);
    EXPECT_TRUE(std::isnan(r[1]));
    EXPECT_TRUE(std::isfinite(r[0]) && std::isfinite(r[2]));
  }
}

TEST_P(BackendOps, SwigluForwardAndBackward) {
  const auto g = random_values(500, 17, 3.0f), u = random_values(500, 18), d = random_values(500, 19);
  Tensor tg = upload({1, 20, 25}, g), tu = upload({1, 20, 25}, u), td = upload({1, 20, 25}, d);
  Tensor out = be->empty({1, 20, 25});
  be->swiglu(tg, tu, out);
  std::vector<double> fwd(500), dgate(500), hidden(500), dup(500);
  for (int i = 0; i < 500; ++i) {
    const double sig = 1 / (1 + std::exp(-double(g[i]))), act = g[i] * sig;
    fwd[i] = act * u[i];
    hidden[i] = act * u[i];
    dup[i] = d[i] * act;
    // d/dg [silu(g) u] = u sig (1 + g (1 - sig)), by hand
    dgate[i] = d[i] * u[i] * sig * (1 + g[i] * (1 - sig));
  }
  EXPECT_LT(max_abs_error(be->to_host(out), fwd), 1e-5);
  be->swiglu_backward(tg, tu, td);
  EXPECT_LT(max_abs_error(be->to_host(tg), dgate), 1e-5);
  EXPECT_LT(max_abs_error(be->to_host(tu), hidden), 1e-5);
  EXPECT_LT(max_abs_error(be->to_host(td), dup), 1e-5);
}

// Columns [first, first + cols) of every row of packed [rows, 2 cols].
std::vector<float> column_block(const std::vector<float>& packed, int64_t first, int64_t cols) {
  std::vector<float> block;
  for (size_t at = 0; at < packed.size(); at += static_cast<size_t>(2 * cols))
    block.insert(block.end(), packed.begin() + at + first, packed.begin() + at + first + cols);
  return block;
}

// The TTT layer's inner backward on the packed product [K W0 | K W2] with its per-token learning rates folded in:
// [2 heads, 37 tokens, 2 x 24], gate's row (h, t) times lr[t * 6 + h] (lr0), the hidden's lr[t * 6 + 2 + h] (lr1),
// dL/dup's lr[t * 6 + 4 + h] (lr2), the layer's layout; against the double loop, and bit for bit swiglu_backward
// followed by scale_rows on each output of the separate tensors.
TEST_P(BackendOps, SwigluBackwardPackedFoldsTheRowScaling) {
  const int64_t heads = 2, tokens = 37, cols = 24, n = heads * tokens * cols;
  const auto g = random_values(n, 24, 3.0f), u = random_values(n, 25), d = random_values(n, 26),
             lr = random_values(tokens * 3 * heads, 27);
  const Shape shape{heads, tokens, cols};
  Tensor tlr = upload({tokens * 3 * heads}, lr),
         tgu = upload({heads, tokens, 2 * cols}, test::side_by_side(g, u, cols));
  Tensor td = upload(shape, d);
  be->swiglu_backward_packed(tgu, td, tlr.data(), heads, 1, 3 * heads);
  std::vector<double> dgate(n), hidden(n), dup(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t h = i / (tokens * cols), t = i / cols % tokens;
    const double sig = 1 / (1 + std::exp(-double(g[i]))), act = g[i] * sig;
    dgate[i] = d[i] * u[i] * sig * (1 + g[i] * (1 - sig)) * lr[t * 3 * heads + h];
    hidden[i] = act * u[i] * lr[t * 3 * heads + heads + h];
    dup[i] = d[i] * act * lr[t * 3 * heads + 2 * heads + h];
  }
  const std::vector<float> fgu = be->to_host(tgu), fd = be->to_host(td);
  const std::vector<float> fg = column_block(fgu, 0, cols), fu = column_block(fgu, cols, cols);
  EXPECT_LT(max_abs_error(fg, dgate), 1e-5);
  EXPECT_LT(max_abs_error(fu, dup), 1e-5);  // dL/dup in up's columns, for K^T [dgate | dup]
  EXPECT_LT(max_abs_error(fd, hidden), 1e-5);
  Tensor sg = upload(shape, g), su = upload(shape, u), sd = upload(shape, d);
  be->swiglu_backward(sg, su, sd);
  be->scale_rows(sg, tlr.data(), 1, 3 * heads);
  be->scale_rows(su, tlr.data() + heads, 1, 3 * heads);
  be->scale_rows(sd, tlr.data() + 2 * heads, 1, 3 * heads);
  EXPECT_EQ(fg, be->to_host(sg));
  EXPECT_EQ(fd, be->to_host(su));
  EXPECT_EQ(fu, be->to_host(sd));
}

// SwiGLU on the packed product [3, 19, 2 x 33]: gate's columns become silu(gate) * up, up's stay; against the double
// loop and bit for bit swiglu on the separate tensors.
TEST_P(BackendOps, SwigluPackedWritesTheGateColumns) {
  const int64_t batch = 3, rows = 19, cols = 33, n = batch * rows * cols;
  const auto g = random_values(n, 28, 3.0f), u = random_values(n, 29);
  Tensor tgu = upload({batch, rows, 2 * cols}, test::side_by_side(g, u, cols));
  be->swiglu_packed(tgu);
  std::vector<double> fwd(n);
  for (int64_t i = 0; i < n; ++i) fwd[i] = g[i] / (1 + std::exp(-double(g[i]))) * u[i];
  const std::vector<float> got = be->to_host(tgu);
  EXPECT_LT(max_abs_error(column_block(got, 0, cols), fwd), 1e-5);
  EXPECT_EQ(column_block(got, cols, cols), u);
  Tensor tg = upload({batch, rows, cols}, g), tu = upload({batch, rows, cols}, u);
  be->swiglu(tg, tu, tg);
  EXPECT_EQ(column_block(got, 0, cols), be->to_host(tg));
}

TEST_P(BackendOps, ColumnNormsAndRestore) {
  const int64_t batch = 2, rows = 30, cols = 11;
  const auto w = random_values(batch * rows * cols, 20), target = random_values(batch * cols, 21);
  Tensor tw = upload({batch, rows, cols}, w), norms = be->empty({batch, cols});
  be->column_norms(tw, norms);
  std::vector<double> expected(batch * cols, 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        expected[b * cols + c] += double(w[(b * rows + r) * cols + c]) * w[(b * rows + r) * cols + c];
  for (double& e : expected) e = std::sqrt(e);
  EXPECT_LT(max_abs_error(be->to_host(norms), expected), 1e-5);

  Tensor tt = upload({batch, cols}, target);
  be->restore_column_norms(tw, tt, 1e-5f);
  std::vector<double> restored(w.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        restored[(b * rows + r) * cols + c] =
            w[(b * rows + r) * cols + c] / (expected[b * cols + c] + 1e-5) * target[b * cols + c];
  EXPECT_LT(max_abs_error(be->to_host(tw), restored), 1e-5);

  const auto dots = be->batched_dot(tw, tw);
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0;
    for (int64_t i = 0; i < rows * cols; ++i) sum += restored[b * rows * cols + i] * restored[b * rows * cols + i];
    EXPECT_NEAR(dots[b], sum, 1e-5 * sum);
  }
}

// conv2d on AlexNet's shapes and odd ones, with and without bias and ReLU, and max_pool2d, against double loops.
// Outputs are filled with NaN first, so an element an op forgets to write fails the test.
TEST_P(BackendOps, Conv2dAndMaxPoolMatchDoubleLoops) {
  const float nan = std::nanf("");
  unsigned seed = 30;
  for (const test::ConvShape& s : test::conv_test_shapes())
    for (bool with_bias : {true, false})
      for (bool relu : {true, false}) {
        const auto x = random_values(s.batch * s.channels * s.height * s.width, ++seed);
        const auto w = random_values(s.outputs * s.channels * s.kh * s.kw, ++seed, 0.3f);
        const auto bias = with_bias ? random_values(s.outputs, ++seed) : std::vector<float>{};
        Tensor tx = upload({s.batch, s.channels, s.height, s.width}, x),
               tw = upload({s.outputs, s.channels, s.kh, s.kw}, w);
        Tensor tb = with_bias ? upload({s.outputs}, bias) : Tensor();
        Tensor ty = be->empty({s.batch, s.outputs, s.out_h(), s.out_w()});
        be->fill(ty, nan);
        be->conv2d(tx, tw, tb, s.stride, s.padding, relu, ty);
        EXPECT_LT(relative_error(be->to_host(ty), test::naive_conv2d(s, x, w, bias, relu)), 1e-5)
            << "conv2d " << s.channels << "->" << s.outputs << " kernel " << s.kh << "x" << s.kw << " stride "
            << s.stride << " bias " << with_bias << " relu " << relu;
      }
  for (auto [height, width, kernel, stride] : {std::tuple{15, 15, 3, 2}, {31, 20, 3, 2}, {9, 7, 2, 3}, {5, 5, 5, 1}}) {
    const int64_t planes = 6;
    const auto x = random_values(planes * height * width, ++seed);
    Tensor tx = upload({2, 3, height, width}, x);
    Tensor ty = be->empty({2, 3, (height - kernel) / stride + 1, (width - kernel) / stride + 1});
    be->fill(ty, nan);
    be->max_pool2d(tx, kernel, stride, ty);
    const std::vector<float> pooled = be->to_host(ty);  // a maximum is one of the values: exact (NaN fails)
    EXPECT_EQ(std::vector<double>(pooled.begin(), pooled.end()),
              test::naive_max_pool2d(planes, height, width, kernel, stride, x))
        << "max_pool2d " << height << "x" << width << " kernel " << kernel << " stride " << stride;
  }
}

// Attention at each precision, head dim 64 (the tensor-core kernel's at bf16) and 300 keys: against a double
// loop, fp32 and tf32 (fp32 attention) <= 1e-5 relative, bf16 <= 1e-2. Outputs poisoned with NaN first.
TEST_P(BackendOps, AttentionAtEveryPrecision) {
  const int64_t batch = 3, queries = 130, keys = 300, dim = 64;
  const auto q = random_values(batch * queries * dim, 60), k = random_values(batch * keys * dim, 61),
             v = random_values(batch * keys * dim, 62);
  const double scale = 0.125;
  const std::vector<double> expected = naive_attention(q, k, v, batch, queries, keys, dim, scale);
  struct Case {
    Precision precision;
    double tolerance;
  };
  for (const Case& pc : {Case{Precision::Fp32, 1e-5}, Case{Precision::Tf32, 1e-5}, Case{Precision::Bf16, 1e-2}}) {
    if (GetParam() == "cpu" && pc.precision != Precision::Fp32) continue;
    auto backend = make_backend(GetParam(), 2, pc.precision);
    Tensor tq = backend->from_host({batch, queries, dim}, q.data()),
           tk = backend->from_host({batch, keys, dim}, k.data()), tv = backend->from_host({batch, keys, dim}, v.data()),
           out = backend->empty({batch, queries, dim});
    backend->fill(out, NAN);
    backend->attention(tq, tk, tv, static_cast<float>(scale), out);
    const double err = relative_error(backend->to_host(out), expected);
    EXPECT_LT(err, pc.tolerance) << precision_name(pc.precision);
    std::printf("%s %s attention rel err %.3g (%s)\n", GetParam().c_str(), precision_name(pc.precision).c_str(), err,
                cuda::attention_path(*backend).c_str());  // on a GPU: whether cuDNN's SDPA ran
  }
}

// One third of the packed qkv [views, tokens, 3 heads d] (0: q, 1: k, 2: v) as [views * heads, tokens, d].
std::vector<float> packed_third(const std::vector<float>& qkv, int64_t views, int64_t tokens, int64_t heads, int64_t d,
                                int64_t third) {
  std::vector<float> out(views * heads * tokens * d);
  const int64_t width = 3 * heads * d;
  for (int64_t v = 0; v < views; ++v)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t e = 0; e < d; ++e)
          out[((v * heads + h) * tokens + t) * d + e] = qkv[(v * tokens + t) * width + (third * heads + h) * d + e];
  return out;
}

// naive_attention of each view's heads taken from the packed qkv, merged into [views, tokens, heads d].
std::vector<double> naive_packed_attention(const std::vector<float>& qkv, int64_t views, int64_t tokens, int64_t heads,
                                           int64_t d, double scale) {
  const std::vector<double> per_head =
      naive_attention(packed_third(qkv, views, tokens, heads, d, 0), packed_third(qkv, views, tokens, heads, d, 1),
                      packed_third(qkv, views, tokens, heads, d, 2), views * heads, tokens, tokens, d, scale);
  std::vector<double> out(per_head.size());
  for (int64_t v = 0; v < views; ++v)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t e = 0; e < d; ++e)
          out[(v * tokens + t) * heads * d + h * d + e] = per_head[((v * heads + h) * tokens + t) * d + e];
  return out;
}

// Today's path on `be`: split_heads of q, k and v, attention, merge_heads.
Tensor split_path_attention(Backend& be, const Tensor& qkv, int64_t heads, int64_t d, float scale) {
  const int64_t views = qkv.dim(0), tokens = qkv.dim(1);
  Tensor q = be.empty({views, heads, tokens, d}), k = be.empty(q.shape()), v = be.empty(q.shape());
  be.split_heads(qkv, 0, heads, d, q);
  be.split_heads(qkv, heads * d, heads, d, k);
  be.split_heads(qkv, 2 * heads * d, heads, d, v);
  const Shape batched{views * heads, tokens, d};
  Tensor o = be.empty(batched), merged = be.empty({views, tokens, heads * d});
  be.attention(q.reshape(batched), k.reshape(batched), v.reshape(batched), scale, o);
  be.merge_heads(o.reshape({views, heads, tokens, d}), merged);
  return merged;
}

// Attention straight from the packed qkv projection output (each head's q, k, v strided columns of it, its output
// written into its columns of [views, tokens, heads d]) against the double loop: 700 tokens (more than one query
// tile of the CPU kernel), 3 heads of 16, output poisoned with NaN; qkv is left as it was.
TEST_P(BackendOps, AttentionPackedMatchesSoftmaxLoop) {
  const int64_t views = 2, tokens = 700, heads = 3, d = 16;
  const auto qkv = random_values(views * tokens * 3 * heads * d, 17);
  Tensor tqkv = upload({views, tokens, 3 * heads * d}, qkv), out = be->empty({views, tokens, heads * d});
  be->fill(out, NAN);
  const double scale = 0.25;
  be->attention_packed(tqkv, heads, d, static_cast<float>(scale), out);
  EXPECT_LT(max_abs_error(be->to_host(out), naive_packed_attention(qkv, views, tokens, heads, d, scale)), 1e-5);
  EXPECT_EQ(be->to_host(tqkv), qkv);
}

// The packed attention at each precision, head dim 64 (cuDNN's and the fa2 kernel's at bf16): against the double
// loop with AttentionAtEveryPrecision's bounds (fp32 and tf32 1e-5 relative, bf16 1e-2), and against today's path on
// the same backend (split_heads, attention, merge_heads): 1e-6 relative at fp32 and tf32, 1e-2 at bf16.
TEST_P(BackendOps, AttentionPackedAtEveryPrecision) {
  const int64_t views = 2, tokens = 130, heads = 2, d = 64;
  const auto qkv = random_values(views * tokens * 3 * heads * d, 63);
  const double scale = 0.125;
  const std::vector<double> expected = naive_packed_attention(qkv, views, tokens, heads, d, scale);
  struct Case {
    Precision precision;
    double tolerance, against_split;
  };
  for (const Case& pc :
       {Case{Precision::Fp32, 1e-5, 1e-6}, Case{Precision::Tf32, 1e-5, 1e-6}, Case{Precision::Bf16, 1e-2, 1e-2}}) {
    if (GetParam() == "cpu" && pc.precision != Precision::Fp32) continue;
    auto backend = make_backend(GetParam(), 2, pc.precision);
    Tensor tqkv = backend->from_host({views, tokens, 3 * heads * d}, qkv.data()),
           out = backend->empty({views, tokens, heads * d});
    backend->fill(out, NAN);
    backend->attention_packed(tqkv, heads, d, static_cast<float>(scale), out);
    const std::vector<float> got = backend->to_host(out);
    const double err = relative_error(got, expected);
    EXPECT_LT(err, pc.tolerance) << precision_name(pc.precision);
    const std::vector<float> split = backend->to_host(split_path_attention(*backend, tqkv, heads, d, float(scale)));
    EXPECT_LT(relative_error(got, std::vector<double>(split.begin(), split.end())), pc.against_split)
        << precision_name(pc.precision);
    std::printf("%s %s packed attention rel err %.3g (%s)\n", GetParam().c_str(), precision_name(pc.precision).c_str(),
                err, cuda::attention_path(*backend).c_str());
  }
}

// The attention at the shapes where tiling goes wrong, on every path a backend has (on a GPU under each
// LACT_ATTENTION: cuDNN's SDPA and lact's own kernels): token counts around the GPU kernels' 128-query blocks and
// 16- to 64-key tiles (1, 65, 129, a lone query or key), one view-head, head dims 8 (the fp32 kernel; cuDNN's
// smallest), 16, 64 and 128; the split layout and the packed qkv (one head, and 2 views x 3 heads of 63 tokens) at
// each precision, and the packed op on bf16 storage where the backend has it: against the double loop (on the
// bf16-rounded values for bf16 storage), with AttentionAtEveryPrecision's bounds.
TEST_P(BackendOps, AttentionAtTileEdgesOnEveryPath) {
  struct Edge {
    int64_t views, heads, queries, keys;  // heads 0: the split layout, views view-heads
  };
  const Edge edges[] = {{1, 0, 1, 1}, {1, 0, 65, 65}, {1, 0, 129, 129}, {1, 0, 1, 129}, {1, 0, 129, 1},
                        {1, 1, 1, 1}, {1, 1, 65, 65}, {1, 1, 129, 129}, {2, 3, 63, 63}};
  auto rounded = [](std::vector<float> v) {
    for (float& x : v) x = cuda::bf16_value(cuda::bf16_bits(x));
    return v;
  };
  for (const Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
    if (GetParam() == "cpu" && precision != Precision::Fp32) continue;
    auto backend = make_backend(GetParam(), 2, precision);
    const double tolerance = precision == Precision::Bf16 ? 1e-2 : 1e-5;
    for (const int64_t d : {8, 16, 64, 128})
      for (const Edge& e : edges) {
        const double scale = 2.0 / std::sqrt(double(d));
        const std::string what = precision_name(precision) + " d " + std::to_string(d) + ", " +
                                 std::to_string(e.views) + " x " + std::to_string(e.heads) + " heads, " +
                                 std::to_string(e.queries) + " queries x " + std::to_string(e.keys) + " keys";
        const unsigned seed = unsigned(d * 1000 + e.queries * 7 + e.keys + e.heads);
        if (e.heads == 0) {
          const auto q = random_values(e.views * e.queries * d, seed, 1.5f),
                     k = random_values(e.views * e.keys * d, seed + 1),
                     v = random_values(e.views * e.keys * d, seed + 2);
          Tensor tq = backend->from_host({e.views, e.queries, d}, q.data()),
                 tk = backend->from_host({e.views, e.keys, d}, k.data()),
                 tv = backend->from_host({e.views, e.keys, d}, v.data()), out = backend->empty({e.views, e.queries, d});
          backend->fill(out, NAN);
          backend->attention(tq, tk, tv, float(scale), out);
          EXPECT_LT(
              relative_error(backend->to_host(out), naive_attention(q, k, v, e.views, e.queries, e.keys, d, scale)),
              tolerance)
              << what;
          continue;
        }
        const Shape rows{e.views, e.queries, 3 * e.heads * d}, merged{e.views, e.queries, e.heads * d};
        const auto qkv = random_values(shape_numel(rows), seed, 1.5f);
        Tensor tqkv = backend->from_host(rows, qkv.data()), out = backend->empty(merged);
        backend->fill(out, NAN);
        backend->attention_packed(tqkv, e.heads, d, float(scale), out);
        EXPECT_LT(
            relative_error(backend->to_host(out), naive_packed_attention(qkv, e.views, e.queries, e.heads, d, scale)),
            tolerance)
            << what;
        if (precision != Precision::Bf16 || !backend->stores_bf16()) continue;
        const auto qkv16 = rounded(qkv);
        Tensor bqkv = backend->empty(rows, DType::BF16), bout = backend->empty(merged, DType::BF16);
        backend->upload(bqkv, qkv16.data());
        backend->fill(bout, NAN);
        backend->attention_packed(bqkv, e.heads, d, float(scale), bout);
        EXPECT_LT(relative_error(backend->to_host(bout),
                                 naive_packed_attention(qkv16, e.views, e.queries, e.heads, d, scale)),
                  tolerance)
            << what << " on bf16 storage";
      }
    std::printf("%s %s attention at tile edges: %s\n", GetParam().c_str(), precision_name(precision).c_str(),
                cuda::attention_path(*backend).c_str());
  }
}

// Queries with no keys: each output row is a sum of no terms, 0, on every backend and precision (PyTorch's
// scaled_dot_product_attention gives zeros too: its math path's softmax over no scores times no values; the CPU's
// products of depth 0). Head dims a kernel has (16, 64, 128) and one the fp32 kernel pads (48); on a GPU every
// LACT_ATTENTION path reaches it (cuDNN refuses an empty shape, so the backend must not ask it). Output poisoned with
// NaN first; the CPU backend's result is checked against zeros by hand as well.
TEST_P(BackendOps, AttentionWithNoKeysIsZeroOnEveryPrecision) {
  const int64_t batch = 3, queries = 130;
  for (const Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
    if (GetParam() == "cpu" && precision != Precision::Fp32) continue;
    auto backend = make_backend(GetParam(), 2, precision);
    for (const int64_t d : {16, 48, 64, 128}) {
      const auto q = random_values(batch * queries * d, unsigned(d));
      Tensor tq = backend->from_host({batch, queries, d}, q.data()), tk = backend->empty({batch, 0, d}),
             tv = backend->empty({batch, 0, d}), out = backend->empty({batch, queries, d});
      backend->fill(out, NAN);
      backend->attention(tq, tk, tv, 0.125f, out);
      EXPECT_EQ(backend->to_host(out), std::vector<float>(size_t(batch * queries * d), 0.0f))
          << precision_name(precision) << " d " << d << " (" << cuda::attention_path(*backend) << ")";
    }
  }
}

// Long reductions into small outputs (the TTT update's shape, which the CUDA backend splits over the reduction:
// kernels/cuda/gemm_plan.h): 9 x 16 over 20,479 (4 slices of 5,119, 3 more in the last), A and B column blocks of
// wider rows, C rows with gaps that must keep their NaN, beta 0 (C's old NaN ignored) and 1, one matrix and two with
// a shared B, every transpose; at each precision (GemmAtEveryPrecision's bounds) and through gemm_bf16 into float32 C
// where the backend has bf16 storage (1e-5 against the double loop on the same bf16 values).
TEST_P(BackendOps, GemmLongReductionsIntoRowsWithGaps) {
  const int64_t m = 9, n = 16, k = 20479, ldc = n + 3, stride_c = m * ldc + 5;
  struct Case {
    Precision precision;
    bool bf16_operands;
    double tolerance;
  };
  for (const Case& pc : {Case{Precision::Fp32, false, 1e-5}, Case{Precision::Tf32, false, 5e-4},
                         Case{Precision::Bf16, false, 1e-2}, Case{Precision::Bf16, true, 1e-5}}) {
    if (GetParam() == "cpu" && pc.precision != Precision::Fp32) continue;
    auto backend = make_backend(GetParam(), 2, pc.precision);
    if (pc.bf16_operands && !backend->stores_bf16()) continue;
    for (const int64_t batch : {1, 2})
      for (const bool ta : {false, true})
        for (const bool tb : {false, true})
          for (const float beta : {0.0f, 1.0f}) {
            const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
            const int64_t lda = a_cols + 8, ldb = b_cols + 16, b_stride = batch > 1 ? 0 : b_rows * ldb;
            auto a = random_values(batch * a_rows * lda, 81), b = random_values(b_rows * ldb, 82);
            if (pc.bf16_operands)
              for (auto* x : {&a, &b})
                for (float& e : *x) e = cuda::bf16_value(cuda::bf16_bits(e));
            std::vector<float> c0 = random_values(batch * stride_c, 83);
            std::vector<double> want;
            for (int64_t x = 0; x < batch; ++x)
              for (int64_t i = 0; i < stride_c; ++i) {
                float& c = c0[x * stride_c + i];
                const int64_t r = i / ldc, col = i % ldc;
                if (r >= m || col >= n || beta == 0.0f) c = NAN;  // the gaps; C's old values at beta 0
                if (r >= m || col >= n) continue;
                double sum = 0;
                for (int64_t p = 0; p < k; ++p)
                  sum += double(a[x * a_rows * lda + (ta ? p * lda + r : r * lda + p)]) *
                         b[tb ? col * ldb + p : p * ldb + col];
                want.push_back(0.5 * sum + (beta == 0.0f ? 0.0 : double(c)));
              }
            Tensor tc = backend->from_host({batch, stride_c}, c0.data());
            if (pc.bf16_operands) {
              Tensor ta16 = backend->empty({batch, a_rows, lda}, DType::BF16),
                     tb16 = backend->empty({b_rows, ldb}, DType::BF16);
              backend->upload(ta16, a.data());
              backend->upload(tb16, b.data());
              backend->gemm_bf16(ta, tb, m, n, k, 0.5f, {ta16.raw(), lda, a_rows * lda}, {tb16.raw(), ldb, b_stride},
                                 beta, tc.raw(), DType::F32, ldc, stride_c, batch);
            } else {
              Tensor ta32 = backend->from_host({batch, a_rows, lda}, a.data()),
                     tb32 = backend->from_host({b_rows, ldb}, b.data());
              backend->gemm(ta, tb, m, n, k, 0.5f, {ta32.data(), lda, a_rows * lda}, {tb32.data(), ldb, b_stride}, beta,
                            tc.data(), ldc, stride_c, batch);
            }
            const std::vector<float> got = backend->to_host(tc);
            std::vector<float> product;
            int64_t gaps_written = 0;
            for (int64_t x = 0; x < batch; ++x)
              for (int64_t i = 0; i < stride_c; ++i) {
                if (i / ldc >= m || i % ldc >= n)
                  gaps_written += !std::isnan(got[x * stride_c + i]);
                else
                  product.push_back(got[x * stride_c + i]);
              }
            const std::string what = precision_name(pc.precision) + (pc.bf16_operands ? " gemm_bf16" : " gemm") +
                                     " batch " + std::to_string(batch) + " ta " + std::to_string(ta) + " tb " +
                                     std::to_string(tb) + " beta " + std::to_string(beta);
            EXPECT_LT(relative_error(product, want), pc.tolerance) << what;
            EXPECT_EQ(gaps_written, 0) << what;
          }
  }
}

// bf16 storage where a backend has it (CUDA at bf16; skipped elsewhere): the ops the model gives bf16 activations,
// against double loops on the same bf16-rounded values. linear_bf16 within float32 rounding of the exact product (a
// bf16 y within one bf16 step), GELU and the qk norm within one bf16 step of the CPU's float32 op, the packed
// attention within bf16's 1e-2.
TEST_P(BackendOps, Bf16StorageOpsAgainstTheCpu) {
  if (!be->stores_bf16()) GTEST_SKIP() << GetParam() << " keeps float32 only";
  auto backend = make_backend(GetParam(), 2, Precision::Bf16);
  auto rounded = [](std::vector<float> v) {
    for (float& x : v) x = cuda::bf16_value(cuda::bf16_bits(x));
    return v;
  };
  auto bf16_tensor = [&](const Shape& shape, const std::vector<float>& v) {
    Tensor t = backend->empty(shape, DType::BF16);
    backend->upload(t, v.data());
    return t;
  };
  const int64_t rows = 130, in = 64, out = 48;
  const auto x = rounded(random_values(rows * in, 71)), w = random_values(out * in, 72, 0.5f), wr = rounded(w);
  std::vector<double> product(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) product[size_t(r * out + o)] += double(x[r * in + i]) * wr[o * in + i];
  Tensor tw = backend->from_host({out, in}, w.data());
  backend->mark_constant(tw);
  Tensor tx = bf16_tensor({rows, in}, x), y32 = backend->empty({rows, out}),
         y16 = backend->empty({rows, out}, DType::BF16);
  linear(*backend, tx, tw, y32);
  EXPECT_LT(relative_error(backend->to_host(y32), product), 1e-5);
  Tensor tx32 = backend->from_host({rows, in}, x.data());
  linear(*backend, tx32, tw, y16);
  EXPECT_LT(relative_error(backend->to_host(y16), product), 4e-3);

  // gemm_bf16, batched over 2 with B transposed, beta 1 into float32 C (the TTT update's sum): x [2, 65, 64] times
  // W [2, 24, 64]^T, W's rows the first 48 of w.
  Tensor a2 = bf16_tensor({2, 65, in}, x), b2 = bf16_tensor({2, 24, in}, wr), c2 = backend->zeros({2, 65, 24});
  backend->gemm_bf16(false, true, 65, 24, in, 1.0f, {a2.raw(), in, 65 * in}, {b2.raw(), in, 24 * in}, 1.0f, c2.raw(),
                     DType::F32, 24, 65 * 24, 2);
  std::vector<double> batched(size_t(2 * 65 * 24));
  for (int64_t z = 0; z < 2; ++z)
    for (int64_t r = 0; r < 65; ++r)
      for (int64_t o = 0; o < 24; ++o)
        for (int64_t i = 0; i < in; ++i)
          batched[size_t((z * 65 + r) * 24 + o)] += double(x[(z * 65 + r) * in + i]) * wr[(z * 24 + o) * in + i];
  EXPECT_LT(relative_error(backend->to_host(c2), batched), 1e-5);

  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  auto against_cpu = [&](const char* name, auto&& op) {
    Tensor c = cpu->from_host({rows, in}, x.data()), b = bf16_tensor({rows, in}, x);
    op(*cpu, c);
    op(*backend, b);
    EXPECT_LT(relative_error(backend->to_host(b), rounded(cpu->to_host(c))), 4e-3) << name;
  };
  against_cpu("gelu", [](Backend& on, Tensor& t) { on.gelu(t); });
  against_cpu("l2_normalize", [](Backend& on, Tensor& t) { on.l2_normalize(t, 32, 1e-5f); });
  const auto g = random_values(16, 73);
  Tensor gc = cpu->from_host({16}, g.data()), gb = backend->from_host({16}, g.data());
  against_cpu("rms_norm_columns",
              [&](Backend& on, Tensor& t) { on.rms_norm_columns(t, 16, 32, &on == cpu.get() ? gc : gb, 1e-6f); });

  const int64_t views = 2, tokens = 130, heads = 2, d = 64;
  const auto qkv = rounded(random_values(views * tokens * 3 * heads * d, 74));
  Tensor tqkv = bf16_tensor({views, tokens, 3 * heads * d}, qkv),
         o = backend->empty({views, tokens, heads * d}, DType::BF16);
  backend->attention_packed(tqkv, heads, d, 0.125f, o);
  const double err = relative_error(backend->to_host(o), naive_packed_attention(qkv, views, tokens, heads, d, 0.125));
  EXPECT_LT(err, 1e-2);
  std::printf("%s bf16 storage: packed attention rel err %.3g (%s)\n", GetParam().c_str(), err,
              cuda::attention_path(*backend).c_str());
}

// The qk norm in place on the packed rows: q's and k's columns in groups of the head dim, each with its weight,
// against the double loop; v's columns untouched; and bit for bit what rms_norm computes on the split heads.
TEST_P(BackendOps, RmsNormColumnsOnPackedRows) {
  const int64_t views = 2, tokens = 37, heads = 3, d = 16, dim = heads * d, width = 3 * dim;
  const auto x = random_values(views * tokens * width, 18, 3.0f), wq = random_values(d, 19), wk = random_values(d, 20);
  Tensor tx = upload({views, tokens, width}, x), twq = upload({d}, wq), twk = upload({d}, wk);
  Tensor q = be->empty({views, heads, tokens, d}), k = be->empty(q.shape());
  be->split_heads(tx, 0, heads, d, q);
  be->split_heads(tx, dim, heads, d, k);
  be->rms_norm(q, twq, d, 1e-5f, q);
  be->rms_norm(k, twk, d, 1e-5f, k);
  be->rms_norm_columns(tx, 0, dim, twq, 1e-5f);
  be->rms_norm_columns(tx, dim, dim, twk, 1e-5f);
  const std::vector<float> got = be->to_host(tx);
  std::vector<double> expected(x.begin(), x.end());
  for (int64_t r = 0; r < views * tokens; ++r)
    for (int64_t g = 0; g < 2 * heads; ++g) {
      const int64_t at = r * width + g * d;
      const std::vector<float>& w = g < heads ? wq : wk;
      double ms = 0;
      for (int64_t i = 0; i < d; ++i) ms += double(x[at + i]) * x[at + i] / double(d);
      for (int64_t i = 0; i < d; ++i) expected[at + i] = x[at + i] / std::sqrt(ms + 1e-5) * w[i];
    }
  EXPECT_LT(max_abs_error(got, expected), 1e-5);
  for (int64_t r = 0; r < views * tokens; ++r)
    for (int64_t c = 2 * dim; c < width; ++c) ASSERT_EQ(got[r * width + c], x[r * width + c]);
  Tensor q2 = be->empty(q.shape()), k2 = be->empty(q.shape());
  be->split_heads(tx, 0, heads, d, q2);
  be->split_heads(tx, dim, heads, d, k2);
  EXPECT_EQ(be->to_host(q2), be->to_host(q));
  EXPECT_EQ(be->to_host(k2), be->to_host(k));
}

// The TTT layer's heads in one pass: against the double loop (silu, split, L2 norm; no norm where eps < 0) on every
// shape of heads_cases(), src untouched, and bit for bit the silu + split_heads + l2_normalize it replaces.
TEST_P(BackendOps, SplitHeadsSiluMatchesTheDoubleLoopAndTheSequence) {
  for (const test::HeadsCase& c : test::heads_cases()) {
    const auto x = random_values(size_t(c.views * c.tokens * c.width), unsigned(c.head_dim + c.tokens), 3.0f);
    const std::string what = "head_dim " + std::to_string(c.head_dim) + " heads " + std::to_string(c.heads);
    Tensor src = upload(test::heads_source_shape(c), x), dst = be->empty(test::heads_shape(c));
    be->split_heads_silu(src, c.offset, c.heads, c.head_dim, c.eps, dst);
    EXPECT_LT(max_abs_error(be->to_host(dst), test::split_heads_silu_double(x, c)), 2e-6) << what;
    EXPECT_EQ(be->to_host(src), x) << what;
    const test::HeadsRun run = test::run_split_heads_silu(*be, x, c, DType::F32, DType::F32);
    EXPECT_TRUE(test::same_bits(run.fused, run.sequence)) << what;
  }
}

// The same where a backend stores bf16 (CUDA at bf16; skipped elsewhere), for bf16 rows into bf16 or float32 heads
// and float32 rows into bf16 heads: bit for bit the sequence on that backend, and the CPU's op on the same rounded
// values within bf16 rounding.
TEST_P(BackendOps, SplitHeadsSiluOnBf16Storage) {
  if (!be->stores_bf16()) GTEST_SKIP() << GetParam() << " keeps float32 only";
  auto backend = make_backend(GetParam(), 2, Precision::Bf16);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  for (const auto& [from, to] :
       {std::pair{DType::BF16, DType::BF16}, {DType::BF16, DType::F32}, {DType::F32, DType::BF16}})
    for (const test::HeadsCase& c : test::heads_cases()) {
      std::vector<float> x = random_values(size_t(c.views * c.tokens * c.width), unsigned(c.tokens), 3.0f);
      if (from == DType::BF16)
        for (float& v : x) v = cuda::bf16_value(cuda::bf16_bits(v));
      const test::HeadsRun run = test::run_split_heads_silu(*backend, x, c, from, to);
      const test::HeadsRun reference = test::run_split_heads_silu(*cpu, x, c, DType::F32, DType::F32);
      const std::string what =
          std::string(dtype_name(from)) + " -> " + dtype_name(to) + ", head_dim " + std::to_string(c.head_dim);
      EXPECT_TRUE(test::same_bits(run.fused, run.sequence)) << what;
      EXPECT_LT(relative_error(run.fused, reference.fused), 4e-3) << what;
    }
}

// The backend's token builder against core/tokens.cpp's build_tokens (itself checked by hand in test_tokens):
// two views with images, then the same cameras as targets (no images: zero colour channels).
TEST_P(BackendOps, RayTokensMatchHostTokens) {
  const int height = 16, width = 24, patch = 8;
  std::vector<PosedImage> views(2);
  std::vector<float> pixels;
  for (int i = 0; i < 2; ++i) {
    Camera& c = views[i].camera;
    c.width = width, c.height = height, c.fx = 20.5f + i, c.fy = 19.0f, c.cx = 11.7f, c.cy = 8.2f - i;
    const double a = 0.3 + i, b = 0.7;  // a rotation about z then x, and a centre
    const double cz = std::cos(a), sz = std::sin(a), cx = std::cos(b), sx = std::sin(b);
    const double r[9] = {cz, -sz * cx, sz * sx, sz, cz * cx, -cz * sx, 0, sx, cx};
    for (int row = 0; row < 3; ++row) {
      for (int col = 0; col < 3; ++col) c.c2w[row * 4 + col] = r[row * 3 + col];
      c.c2w[row * 4 + 3] = 1.5 * row - i;
    }
    c.c2w[15] = 1;
    views[i].image = Image{width, height, random_values(size_t(height) * width * 3, 40 + i, 0.3f)};
    pixels.insert(pixels.end(), views[i].image.rgb.begin(), views[i].image.rgb.end());
  }
  std::vector<RayPose> poses(2);
  for (int i = 0; i < 2; ++i) {
    const Camera& c = views[i].camera;
    poses[i].fx = c.fx, poses[i].fy = c.fy, poses[i].cx = c.cx, poses[i].cy = c.cy;
    for (int j = 0; j < 12; ++j) poses[i].c2w[j] = c.c2w[j];
  }
  const int64_t tokens = 2 * (height / patch) * (width / patch);
  Tensor images = upload({2, height, width, 3}, pixels), out = be->empty({tokens, patch * patch * 12});
  be->fill(out, NAN);
  be->ray_tokens(poses, &images, height, width, patch, out);
  EXPECT_LT(max_abs_error(be->to_host(out), build_tokens(views, height, width, patch)), 1e-6);
  for (PosedImage& v : views) v.image = Image{};
  be->fill(out, NAN);
  be->ray_tokens(poses, nullptr, height, width, patch, out);
  EXPECT_LT(max_abs_error(be->to_host(out), build_tokens(views, height, width, patch)), 1e-6);
}

// Products at each precision the backend has, against double, on inputs of unit scale and depth 512:
// fp32 <= 1e-5 relative, tf32 <= 5e-4, bf16 operands <= 1e-2 (the CUDA issue's tolerances).
TEST_P(BackendOps, GemmAtEveryPrecision) {
  const int64_t batch = 2, m = 70, n = 90, k = 512;
  const auto a = random_values(batch * m * k, 30), b = random_values(batch * k * n, 31),
             c = random_values(batch * m * n, 32);
  const auto expected = naive_gemm(false, false, batch, m, n, k, 1.0, a, b, 0.5, c);
  std::vector<float> bt(b.size());  // the backend gets B as [n, k] and transposes it, as linear() does
  for (int64_t x = 0; x < batch; ++x)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bt[x * n * k + j * k + p] = b[x * k * n + p * n + j];
  struct Case {
    Precision precision;
    double tolerance;
  };
  for (const Case& pc : {Case{Precision::Fp32, 1e-5}, Case{Precision::Tf32, 5e-4}, Case{Precision::Bf16, 1e-2}}) {
    // The CPU: no tf32; bf16 through oneDNN where the CPU has bf16 instructions, else refused with the reason.
    if (GetParam() == "cpu" &&
        (pc.precision == Precision::Tf32 || (pc.precision == Precision::Bf16 && !cpu_bf16_available()))) {
      EXPECT_THROW(make_backend("cpu", 1, pc.precision), std::invalid_argument);
      continue;
    }
    auto backend = make_backend(GetParam(), 2, pc.precision);
    EXPECT_EQ(backend->precision(), pc.precision);
    Tensor ta = backend->from_host({batch, m, k}, a.data()), tb = backend->from_host({batch, n, k}, bt.data());
    Tensor tc = backend->from_host({batch, m, n}, c.data());
    matmul(*backend, ta, false, tb, true, tc, 1.0f, 0.5f);
    const double err = relative_error(backend->to_host(tc), expected);
    EXPECT_LT(err, pc.tolerance) << precision_name(pc.precision);
    std::printf("%s %s gemm rel err %.3g\n", GetParam().c_str(), precision_name(pc.precision).c_str(), err);
  }
}

// The shared operand checks (kernels/op_checks.h) on every backend: wrong shapes and operands of another backend
// are refused with the op's name before any kernel runs.
TEST_P(BackendOps, OperandChecksAreSharedAndNameTheOp) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor a = be->zeros({2, 3}), b = be->zeros({3, 2}), c = be->zeros({7});
  EXPECT_EQ(message([&] { be->add(a, c); }).rfind("add: sizes differ", 0), 0u);
  Tensor empty_bias = be->zeros({0});
  EXPECT_EQ(message([&] { be->add_bias(a, empty_bias); }).rfind("add_bias:", 0), 0u);  // no division by zero
  EXPECT_EQ(message([&] { be->add_scaled_identity(a, 1.0f); }).rfind("add_scaled_identity: not square", 0), 0u);
  EXPECT_EQ(message([&] { be->scale_batched(a, {1.0f}); }).rfind("scale_batched:", 0), 0u);
  Tensor w = be->zeros({1, 3, 2}), norms = be->zeros({3});
  EXPECT_EQ(message([&] { be->restore_column_norms(w, norms, 1e-5f); }).rfind("restore_column_norms:", 0), 0u);
  const auto other = make_cpu_backend(1);
  Tensor foreign = other->zeros({2, 3});
  EXPECT_NE(message([&] { be->add(a, foreign); }).find("lives on another backend"), std::string::npos);
  EXPECT_NE(message([&] { be->copy(b, foreign); }).find("copy:"), std::string::npos);
  be->add(a, b);  // same size, same backend: fine
}

// lact bench --profile on the CPU: every op timed once, products keyed by shape with their FLOPs (2mnk per
// matrix, by hand), the times within the wall time around them, nothing recorded once stopped.
TEST(Backends, CpuProfileTimesEveryOpAndCountsProductFlops) {
  const auto be = make_cpu_backend(1);
  Tensor a = be->zeros({3, 5, 7}), b = be->zeros({3, 7, 4}), c = be->zeros({3, 5, 4});
  ASSERT_TRUE(be->start_profiling());
  const auto start = std::chrono::steady_clock::now();
  be->gemm(false, false, 5, 4, 7, 1.0f, {a.data(), 7, 35}, {b.data(), 4, 28}, 0.0f, c.data(), 4, 20, 3);
  be->gemm(false, false, 5, 4, 7, 1.0f, {a.data(), 7, 35}, {b.data(), 4, 28}, 0.0f, c.data(), 4, 20, 3);
  be->silu(c);
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::vector<OpProfile> profile = be->stop_profiling();
  be->silu(c);  // after stop: not recorded
  ASSERT_EQ(profile.size(), 2u);
  double total_ms = 0;
  for (const OpProfile& p : profile) {
    total_ms += p.milliseconds;
    if (p.op == "gemm 5x4x7 x3") {
      EXPECT_EQ(p.calls, 2);
      EXPECT_DOUBLE_EQ(p.gflop, 2 * (2.0 * 5 * 4 * 7 * 3) / 1e9);
    } else {
      EXPECT_EQ(p.op, "silu");
      EXPECT_EQ(p.calls, 1);
      EXPECT_EQ(p.gflop, 0);
    }
  }
  EXPECT_LE(total_ms, wall_ms);
  EXPECT_GE(profile[0].milliseconds, profile[1].milliseconds);
  EXPECT_TRUE(be->stop_profiling().empty());
}

TEST(Backends, NamesPrecisionsAndAClearErrorWithoutADevice) {
  EXPECT_EQ(parse_precision("bf16"), Precision::Bf16);
  EXPECT_THROW(parse_precision("fp8"), std::invalid_argument);
  EXPECT_TRUE(backend_available("cpu"));
  std::string why;
  EXPECT_FALSE(backend_available("metal", &why));
  EXPECT_NE(why.find("metal"), std::string::npos);
  if (!backend_available("cuda", &why)) {
    try {
      make_backend("cuda", 1);
      ADD_FAILURE() << "make_backend(cuda) without a device did not throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
    }
  }
}

// The CPU's products on each library it can use (OpenBLAS fp32, oneDNN fp32, oneDNN bf16) on every operand
// layout: transposes, leading dimensions wider than the matrix, batch strides, alpha and beta, against a double
// loop (fp32: <= 1e-5 relative to the largest entry; bf16 operands: <= 1e-2, and not exact).
struct CpuGemmCase {
  const char* name;
  Precision precision;
  CpuGemmLibrary library;
};

void check_every_layout(Backend& be, bool bf16, int64_t m = 37, int64_t n = 29, int64_t k = 53, int64_t batch = 3) {
  const int64_t pad = 5;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "A^T" : "A") + (tb ? " B^T" : " B"));
      const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
      const int64_t sa = (ta ? k : m) * lda + 7, sb = (tb ? n : k) * ldb + 3, sc = m * ldc + 11;
      const std::vector<float> a = random_values(size_t(batch * sa), 1), b = random_values(size_t(batch * sb), 2);
      std::vector<float> c = random_values(size_t(batch * sc), 3);
      const float alpha = 0.75f, beta = -0.5f;
      std::vector<double> expected(c.begin(), c.end());
      for (int64_t q = 0; q < batch; ++q)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < k; ++p)
              sum += double(ta ? a[q * sa + p * lda + i] : a[q * sa + i * lda + p]) *
                     double(tb ? b[q * sb + j * ldb + p] : b[q * sb + p * ldb + j]);
            const size_t at = size_t(q * sc + i * ldc + j);
            expected[at] = alpha * sum + beta * double(c[at]);
          }
      be.gemm(ta, tb, m, n, k, alpha, {a.data(), lda, sa}, {b.data(), ldb, sb}, beta, c.data(), ldc, sc, batch);
      double worst = 0, norm = 0;
      for (size_t i = 0; i < c.size(); ++i)
        worst = std::max(worst, std::fabs(c[i] - expected[i])), norm = std::max(norm, std::fabs(expected[i]));
      EXPECT_LT(worst / norm, bf16 ? 1e-2 : 1e-5);
      if (bf16) {
        EXPECT_GT(worst, 0.0);  // the operands really were rounded to bf16
      }
    }
}

TEST(CpuGemmLibraries, EveryLayoutAgainstADoubleLoop) {
  for (const CpuGemmCase& g : {CpuGemmCase{"OpenBLAS fp32", Precision::Fp32, CpuGemmLibrary::OpenBlas},
                               CpuGemmCase{"oneDNN fp32", Precision::Fp32, CpuGemmLibrary::OneDnn},
                               CpuGemmCase{"oneDNN bf16", Precision::Bf16, CpuGemmLibrary::Auto}}) {
    SCOPED_TRACE(g.name);
    std::string why;
    if (g.library == CpuGemmLibrary::OneDnn && !dnnl_available()) why = dnnl_version_text();
    if (g.precision == Precision::Bf16) cpu_bf16_available(&why);
    if (!why.empty()) {
      std::printf("  %s skipped: %s\n", g.name, why.c_str());
      continue;
    }
    auto be = make_cpu_backend(2, g.precision, g.library);
    check_every_layout(*be, g.precision == Precision::Bf16);
    // C of 2^20 values and more: oneDNN fp32 copies a transposed A to its transpose first (dnnl_gemm.cpp), in
    // 32 x 32 tiles (sides not a multiple of 32, padded rows, batch strides).
    check_every_layout(*be, g.precision == Precision::Bf16, 770, 1370, 9, 2);
  }
}

// pack_bf16's rounding by hand: nearest, ties to even; the largest float rounds to infinity; NaN stays NaN (quiet);
// signs kept. Across a row long enough for the vectorized loop and its tail, transposed storage packed as stored.
TEST(CpuBf16Pack, RoundsToNearestEvenAndKeepsNaN) {
  if (!dnnl_available()) GTEST_SKIP() << dnnl_version_text();
  const std::vector<std::pair<uint32_t, uint16_t>> cases = {
      {0x3F800000u, 0x3F80},  // 1
      {0x3F808000u, 0x3F80},  // 1 + 2^-8: a tie, to the even 0x3F80
      {0x3F818000u, 0x3F82},  // 1 + 3 * 2^-8: a tie, to the even 0x3F82
      {0x3F808001u, 0x3F81},  // just above the tie
      {0x7F7FFFFFu, 0x7F80},  // the largest float: infinity
      {0x7F800000u, 0x7F80},  // infinity
      {0x7F800001u, 0x7FC0},  // a signalling NaN: quiet NaN
      {0xFFC00123u, 0xFFC0},  // a negative quiet NaN
      {0x80000000u, 0x8000},  // -0
      {0xBF80C000u, 0xBF81},  // -(1 + 3 * 2^-9): above the tie, away from zero
  };
  // Subnormals round like any value (the CPU's bf16 conversion instruction flushes them; a block holding one is
  // converted without it).
  const std::vector<std::pair<uint32_t, uint16_t>> subnormals = {
      {0x00018000u, 0x0002},  // 1.5 * 2^-133 (a subnormal bf16 ulp and a half): a tie, to the even 0x0002
      {0x807F8001u, 0x8080},  // the largest subnormals round up to the smallest normal bf16
      {0x00007FFFu, 0x0000},  // below half the smallest bf16 subnormal: zero
  };
  const int64_t width = 37;  // past a vector or two, with a tail
  for (bool with_subnormals : {false, true}) {
    std::vector<std::pair<uint32_t, uint16_t>> all = cases;
    if (with_subnormals) all.insert(all.end(), subnormals.begin(), subnormals.end());
    std::vector<float> values(2 * width);
    for (int64_t i = 0; i < 2 * width; ++i) {
      const uint32_t bits = all[static_cast<size_t>(i) % all.size()].first;
      std::memcpy(&values[static_cast<size_t>(i)], &bits, 4);
    }
    Bf16Buffer packed;
    // op(X) = 37 x 2, stored 2 x 37 (transposed): packed in the stored layout.
    pack_bf16({values.data(), width, 0}, true, width, 2, 1, packed);
    ASSERT_EQ(packed.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(packed.data()[i], all[i % all.size()].second) << "value " << i << " subnormals " << with_subnormals;
  }
}

// bf16 products with a marked constant (Backend::mark_constant, converted to bf16 once): the same bits as the
// product converting it every time; and memory freed and reused at the same address with other values is never
// served from the old conversion, marked again or not.
TEST(CpuBf16Constants, ConvertedOnceNeverStale) {
  std::string why;
  if (!cpu_bf16_available(&why)) GTEST_SKIP() << why;
  auto be = make_cpu_backend(1, Precision::Bf16);
  const int64_t rows = 40, in = 24, out = 16;
  const std::vector<float> x_values = random_values(size_t(rows * in), 4);
  const Tensor x = be->from_host({rows, in}, x_values.data());
  std::vector<float> buffer = random_values(size_t(out * in), 5);  // the weight's memory, reused below
  auto product = [&](bool mark) {
    const Tensor w = be->adopt_host({out, in}, std::shared_ptr<float>(buffer.data(), [](float*) {}));
    if (mark) be->mark_constant(w);
    Tensor y = be->empty({rows, out});
    linear(*be, x, w, y);
    linear(*be, x, w, y);  // the second product uses the kept conversion
    return be->to_host(y);
  };
  const std::vector<float> plain = product(false);
  EXPECT_EQ(product(true), plain);
  const std::vector<float> other = random_values(size_t(out * in), 6);
  const float* address = buffer.data();
  std::copy(other.begin(), other.end(), buffer.begin());  // same address, other values; the marked tensor is gone
  ASSERT_EQ(buffer.data(), address);
  EXPECT_NE(product(false), plain);
  const std::vector<float> fresh = product(false);
  EXPECT_EQ(product(true), fresh);
  EXPECT_EQ(product(false), fresh);
}

// A marked B is reordered once into the layout oneDNN asks for (chosen by the first product of its shape) and used
// by products of other row counts: each gives the bits of the same product with B unmarked (packed plain), for B
// transposed or not, one matrix or a batch of two.
TEST(CpuBf16Constants, ReorderedOnceForEveryRowCount) {
  std::string why;
  if (!cpu_bf16_available(&why)) GTEST_SKIP() << why;
  auto be = make_cpu_backend(2, Precision::Bf16);
  const int64_t k = 70, n = 130;
  for (const int64_t batch : {1, 2})
    for (const bool transpose_b : {false, true}) {
      const std::vector<float> b_values = random_values(size_t(batch * k * n), 7);
      const Tensor marked = be->from_host({batch * k * n}, b_values.data());
      const Tensor unmarked = be->from_host({batch * k * n}, b_values.data());
      be->mark_constant(marked);
      for (const int64_t m : {64, 5, 300, 64}) {
        SCOPED_TRACE(::testing::Message() << "batch " << batch << " transposed " << transpose_b << " m " << m);
        const std::vector<float> a_values = random_values(size_t(batch * m * k), 8 + m);
        const Tensor a = be->from_host({batch * m * k}, a_values.data());
        Tensor with = be->empty({batch * m * n}), without = be->empty({batch * m * n});
        const MatrixOperand a_op{a.data(), k, m * k};
        for (const auto& [b, c] : {std::pair{&marked, &with}, std::pair{&unmarked, &without}})
          be->gemm(false, transpose_b, m, n, k, 1.0f, a_op, {b->data(), transpose_b ? k : n, k * n}, 0.0f, c->data(), n,
                   m * n, batch);
        EXPECT_EQ(be->to_host(with), be->to_host(without));
      }
    }
}

#ifdef LACT_HAVE_CUDA
// cuBLAS is opened on first use, not linked: the library of the toolkit lact was built with opens and has every
// entry point the CUDA backend calls (no GPU needed), and its status strings are cuBLAS's own.
TEST(CublasLibrary, OpensWithEveryEntryPoint) {
  const cuda::CublasLibrary& lib = cuda::cublas();
  for (const void* f :
       {(const void*)lib.create, (const void*)lib.destroy, (const void*)lib.set_stream, (const void*)lib.set_math_mode,
        (const void*)lib.set_workspace, (const void*)lib.gemm_strided_batched_ex, (const void*)lib.status_string})
    EXPECT_NE(f, nullptr);
  EXPECT_STREQ(lib.status_string(CUBLAS_STATUS_NOT_INITIALIZED), "the library was not initialized");
}
#endif

INSTANTIATE_TEST_SUITE_P(AllBackends, BackendOps, ::testing::ValuesIn(backend_names()));

}  // namespace
}  // namespace lact
