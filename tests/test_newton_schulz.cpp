// Newton-Schulz (dense, both Gram sides, batched) and its low-rank route against the iteration run
// naively in double precision. Tolerance 1e-4 relative Frobenius: float32 rounding amplified by five
// polynomial steps with coefficients up to 4.8.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/newton_schulz.h"
#include "tests/test_util.h"

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

TEST(NewtonSchulzCost, LowRankIsChosenOnlyWhenCheaper) {
  // 512 tokens on 768 x 1536 (the benchmark's TTT layer): the low-rank route is over twice as cheap.
  EXPECT_LT(2 * newton_schulz_low_rank_flops(512, 768, 1536, 5), newton_schulz_dense_flops(512, 768, 1536, 5));
  // 8192 tokens: the dense route wins.
  EXPECT_GT(newton_schulz_low_rank_flops(8192, 768, 1536, 5), newton_schulz_dense_flops(8192, 768, 1536, 5));
}

INSTANTIATE_TEST_SUITE_P(AllBackends, NewtonSchulz, ::testing::ValuesIn(backend_names()));

}  // namespace
}  // namespace lact
