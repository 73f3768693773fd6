// Newton-Schulz (dense, both Gram sides, batched) and its low-rank route against the iteration run
// naively in double precision. Tolerance 1e-4 relative Frobenius: float32 rounding amplified by five
// polynomial steps with coefficients up to 4.8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "kernels/backend_factory.h"
#include "kernels/newton_schulz.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using Matrix = std::vector<double>;  // row-major

Matrix multiply(const Matrix& a, const Matrix& b, int m, int k, int n, bool transpose_b = false) {
  Matrix c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * (transpose_b ? b[j * k + p] : b[p * n + j]);
  return c;
}

// The official iteration, in double: X = G / (||G|| + 1e-7); A = X X^T; X = aX + (bA + cA^2) X, on the
// transposed matrix when rows > cols.
Matrix naive_newton_schulz(Matrix g, int rows, int cols, int steps) {
  if (rows > cols) {
    Matrix t(g.size());
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) t[j * rows + i] = g[i * cols + j];
    Matrix r = naive_newton_schulz(t, cols, rows, steps);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) g[i * cols + j] = r[j * rows + i];
    return g;
  }
  double norm = 0;
  for (double v : g) norm += v * v;
  norm = std::sqrt(norm);
  for (double& v : g) v /= norm + 1e-7;
  for (int s = 0; s < steps; ++s) {
    const Matrix a = multiply(g, g, rows, cols, rows, true);
    const Matrix a2 = multiply(a, a, rows, rows, rows);
    Matrix b(a.size());
    for (size_t i = 0; i < b.size(); ++i) b[i] = -4.7750 * a[i] + 2.0315 * a2[i];
    const Matrix bx = multiply(b, g, rows, rows, cols);
    for (size_t i = 0; i < g.size(); ++i) g[i] = 3.4445 * g[i] + bx[i];
  }
  return g;
}

class NewtonSchulz : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    if (!backend_available(GetParam(), &why)) GTEST_SKIP() << GetParam() << ": " << why;
    be = make_backend(GetParam(), 2);
  }
  std::unique_ptr<Backend> be;
};

TEST_P(NewtonSchulz, DenseWideAndTallBatched) {
  for (auto [rows, cols] : {std::pair{24, 40}, std::pair{40, 24}, std::pair{32, 32}}) {
    const int batch = 2;
    const auto g = test::random_values(size_t(batch) * rows * cols, 30 + rows);
    Tensor t = be->from_host({batch, rows, cols}, g.data());
    newton_schulz5(*be, t, 5);
    const auto got = be->to_host(t);
    for (int b = 0; b < batch; ++b) {
      const size_t n = size_t(rows) * cols;
      const Matrix expected = naive_newton_schulz(Matrix(g.begin() + b * n, g.begin() + (b + 1) * n), rows, cols, 5);
      const std::vector<float> got_b(got.begin() + b * n, got.begin() + (b + 1) * n);
      EXPECT_LT(test::relative_error(got_b, expected), 1e-4) << rows << "x" << cols << " batch " << b;
    }
  }
}

TEST_P(NewtonSchulz, LowRankEqualsDenseOnTheProduct) {
  // P [N, rows], Q [N, cols]; NS(P^T Q) added to `out`. N below and above the sides.
  for (int tokens : {7, 20, 60}) {
    const int batch = 2, rows = 24, cols = 48;
    const auto p = test::random_values(size_t(batch) * tokens * rows, 40 + tokens);
    const auto q = test::random_values(size_t(batch) * tokens * cols, 50 + tokens);
    const auto base = test::random_values(size_t(batch) * rows * cols, 60);
    Tensor tp = be->from_host({batch, tokens, rows}, p.data()), tq = be->from_host({batch, tokens, cols}, q.data());
    Tensor out = be->from_host({batch, rows, cols}, base.data());
    newton_schulz5_low_rank_add(*be, tp, tq, 5, out);
    const auto got = be->to_host(out);
    for (int b = 0; b < batch; ++b) {
      Matrix pt(size_t(rows) * tokens), qb(size_t(tokens) * cols);
      for (int t = 0; t < tokens; ++t) {
        for (int r = 0; r < rows; ++r) pt[r * tokens + t] = p[(size_t(b) * tokens + t) * rows + r];
        for (int c = 0; c < cols; ++c) qb[t * cols + c] = q[(size_t(b) * tokens + t) * cols + c];
      }
      Matrix expected = naive_newton_schulz(multiply(pt, qb, rows, tokens, cols), rows, cols, 5);
      const size_t n = size_t(rows) * cols;
      std::vector<float> delta(n);
      for (size_t i = 0; i < n; ++i) delta[i] = got[b * n + i] - base[b * n + i];
      EXPECT_LT(test::relative_error(delta, expected), 1e-4) << "tokens " << tokens << " batch " << b;
    }
  }
}

// An orthonormal basis (rows of the result, each of length n) of the span of `vectors` (row-major, count x n):
// modified Gram-Schmidt twice, a vector whose remainder falls below 1e-9 of its length dropped (a dependent one).
Matrix span_basis(const Matrix& vectors, int count, int n, int* rank) {
  Matrix basis;
  *rank = 0;
  for (int v = 0; v < count; ++v) {
    std::vector<double> x(vectors.begin() + size_t(v) * n, vectors.begin() + size_t(v + 1) * n);
    double length = 0;
    for (double e : x) length += e * e;
    for (int pass = 0; pass < 2; ++pass)
      for (int b = 0; b < *rank; ++b) {
        double dot = 0;
        for (int i = 0; i < n; ++i) dot += basis[size_t(b) * n + i] * x[i];
        for (int i = 0; i < n; ++i) x[i] -= dot * basis[size_t(b) * n + i];
      }
    double rest = 0;
    for (double e : x) rest += e * e;
    if (rest <= 1e-18 * length || rest == 0) continue;
    for (double& e : x) basis.push_back(e / std::sqrt(rest));
    ++*rank;
  }
  return basis;
}

// x <- U U^T x V V^T for x [rows, cols] and bases U^T [ru, rows], V^T [rv, cols].
void project(Matrix& x, const Matrix& ut, int ru, const Matrix& vt, int rv, int rows, int cols) {
  const Matrix left = multiply(ut, x, ru, rows, cols);  // U^T x
  Matrix back(x.size(), 0.0);                           // U U^T x
  for (int b = 0; b < ru; ++b)
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) back[i * cols + j] += ut[b * rows + i] * left[b * cols + j];
  const Matrix right = multiply(back, vt, rows, cols, rv, true);  // (U U^T x) V
  std::fill(x.begin(), x.end(), 0.0);
  for (int i = 0; i < rows; ++i)
    for (int b = 0; b < rv; ++b)
      for (int j = 0; j < cols; ++j) x[i * cols + j] += right[i * rv + b] * vt[b * cols + j];
}

// One step of the official iteration in double, on the smaller Gram side: A = X X^T, X <- aX + (bA + cA^2) X,
// or A = X^T X, X <- aX + X (bA + cA^2).
void one_step(Matrix& x, int rows, int cols) {
  const bool wide = rows <= cols;
  const int side = wide ? rows : cols;
  Matrix xt(x.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) xt[j * rows + i] = x[i * cols + j];
  const Matrix a = wide ? multiply(x, x, rows, cols, rows, true) : multiply(xt, xt, cols, rows, cols, true);
  const Matrix a2 = multiply(a, a, side, side, side);
  Matrix b(a.size());
  for (size_t i = 0; i < b.size(); ++i) b[i] = -4.7750 * a[i] + 2.0315 * a2[i];
  const Matrix bx = wide ? multiply(b, x, rows, rows, cols) : multiply(x, b, rows, cols, cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 3.4445 * x[i] + bx[i];
}

// NS(P^T Q) after each of `steps`: the official d x d iteration in double, each iterate projected back onto the span of
// P^T's columns and Q's rows. Exact arithmetic never leaves that span; double rounding would (it grows by a = 3.4445 a
// step, from 1e-16 to order 1 by step 32), so without the projection a double loop is no reference past ~20 steps.
std::vector<Matrix> exact_low_rank_newton_schulz(const Matrix& p, const Matrix& q, int tokens, int rows, int cols,
                                                 const std::vector<int>& steps) {
  Matrix pt(size_t(rows) * tokens);
  for (int t = 0; t < tokens; ++t)
    for (int r = 0; r < rows; ++r) pt[r * tokens + t] = p[t * rows + r];
  int ru = 0, rv = 0;
  const Matrix ut = span_basis(p, tokens, rows, &ru), vt = span_basis(q, tokens, cols, &rv);
  Matrix x = multiply(pt, q, rows, tokens, cols);
  double norm = 0;
  for (double v : x) norm += v * v;
  for (double& v : x) v /= std::sqrt(norm) + 1e-7;
  std::vector<Matrix> at_steps;  // the iterate after each of `steps` (ascending)
  for (int s = 0; s <= steps.back(); ++s) {
    if (s > 0) {
      one_step(x, rows, cols);
      project(x, ut, ru, vt, rv, rows, cols);
    }
    if (std::find(steps.begin(), steps.end(), s) != steps.end()) at_steps.push_back(x);
  }
  return at_steps;
}

// P [N, rows] and Q [N, cols] as tokens come: independent; one token repeated (P's and Q's Gram matrices
// singular: the C iteration's blind spot); a zero token in P; tokens close to one another (Gram matrices
// ill-conditioned, as a small scene's are: the fixture's layer 0 has cond(P P^T) ~ 6e6).
struct TokenCase {
  const char* name;
  int tokens, rows, cols;
};

void make_tokens(const TokenCase& c, unsigned seed, std::vector<float>& p, std::vector<float>& q) {
  p = test::random_values(size_t(c.tokens) * c.rows, seed);
  q = test::random_values(size_t(c.tokens) * c.cols, seed + 1);
  const std::string name = c.name;
  if (name == "repeated") {
    std::copy_n(p.begin(), c.rows, p.begin() + c.rows);
    std::copy_n(q.begin(), c.cols, q.begin() + c.cols);
  } else if (name == "zero") {
    std::fill_n(p.begin() + (c.tokens - 1) * c.rows, c.rows, 0.0f);
  } else if (name == "close") {
    for (int t = 1; t < c.tokens; ++t) {
      for (int r = 0; r < c.rows; ++r) p[t * c.rows + r] = p[r] + 1e-2f * p[t * c.rows + r];
      for (int r = 0; r < c.cols; ++r) q[t * c.cols + r] = q[r] + 1e-2f * q[t * c.cols + r];
    }
  }
}

// The worst relative error of the route at each of `steps`, over a batch of two.
std::vector<double> low_rank_errors(Backend& be, const TokenCase& c, const std::vector<int>& steps) {
  const int batch = 2;  // the second batch independent tokens: the two ranks differ
  std::vector<float> p, q, p2, q2;
  make_tokens(c, 70 + c.tokens, p, q);
  make_tokens({"independent", c.tokens, c.rows, c.cols}, 90 + c.tokens, p2, q2);
  p.insert(p.end(), p2.begin(), p2.end());
  q.insert(q.end(), q2.begin(), q2.end());
  Tensor tp = be.from_host({batch, c.tokens, c.rows}, p.data()), tq = be.from_host({batch, c.tokens, c.cols}, q.data());
  const size_t np = size_t(c.tokens) * c.rows, nq = size_t(c.tokens) * c.cols, n = size_t(c.rows) * c.cols;
  std::vector<std::vector<Matrix>> expected;
  for (int b = 0; b < batch; ++b) {
    const Matrix pb(p.begin() + b * np, p.begin() + (b + 1) * np), qb(q.begin() + b * nq, q.begin() + (b + 1) * nq);
    expected.push_back(exact_low_rank_newton_schulz(pb, qb, c.tokens, c.rows, c.cols, steps));
  }
  std::vector<double> worst(steps.size(), 0.0);
  for (size_t s = 0; s < steps.size(); ++s) {
    Tensor out = be.zeros({batch, c.rows, c.cols});
    newton_schulz5_low_rank_add(be, tp, tq, steps[s], out);
    const auto got = be.to_host(out);
    for (int b = 0; b < batch; ++b) {
      const double err =
          test::relative_error(std::vector<float>(got.begin() + b * n, got.begin() + (b + 1) * n), expected[b][s]);
      worst[s] = std::isfinite(err) ? std::max(worst[s], err) : INFINITY;
    }
  }
  return worst;
}

// Issue 48: muon_update_steps 16-64 (the documented range ends at 64) gave NaN on the token route at small
// token counts; now every step count matches the exact iteration to the parity tolerance, fp32.
TEST_P(NewtonSchulz, LowRankMatchesTheExactIterationAtEveryStepCount) {
  double worst = 0;
  for (const char* name : {"independent", "repeated", "zero", "close"})
    for (auto [tokens, rows, cols] : {std::tuple{3, 24, 48}, std::tuple{7, 48, 24}, std::tuple{16, 24, 48}}) {
      const std::vector<int> steps = {0, 1, 5, 6, 12, 16, 32, 64};
      const std::vector<double> errors = low_rank_errors(*be, {name, tokens, rows, cols}, steps);
      for (size_t s = 0; s < steps.size(); ++s) {
        EXPECT_LT(errors[s], 1e-4) << name << " tokens " << tokens << " " << rows << "x" << cols << " steps "
                                   << steps[s];
        worst = std::max(worst, errors[s]);
      }
    }
  std::printf("%s: low-rank Newton-Schulz, 0-64 steps, rel err <= %.3g\n", GetParam().c_str(), worst);
}

TEST(NewtonSchulzCost, LowRankIsChosenOnlyWhenCheaper) {
  // 512 tokens on 768 x 1536 (the benchmark's TTT layer): the low-rank route is over twice as cheap.
  EXPECT_LT(2 * newton_schulz_low_rank_flops(512, 768, 1536, 5), newton_schulz_dense_flops(512, 768, 1536, 5));
  // 8192 tokens: the dense route wins.
  EXPECT_GT(newton_schulz_low_rank_flops(8192, 768, 1536, 5), newton_schulz_dense_flops(8192, 768, 1536, 5));
}

INSTANTIATE_TEST_SUITE_P(AllBackends, NewtonSchulz, ::testing::ValuesIn(backend_names()));

}  // namespace
}  // namespace lact
