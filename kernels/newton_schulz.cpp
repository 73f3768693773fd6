#include "kernels/newton_schulz.h"

#include <cblas.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

namespace lact {

namespace {
constexpr double kFrobeniusEps = 1e-7;

std::vector<float> inverse_norms(const std::vector<double>& squared_norms) {
  std::vector<float> scale(squared_norms.size());
  for (size_t i = 0; i < scale.size(); ++i)
    scale[i] = static_cast<float>(1.0 / (std::sqrt(squared_norms[i]) + kFrobeniusEps));
  return scale;
}
}  // namespace

void newton_schulz5(Backend& be, Tensor& g, int steps) {
  const int64_t batch = g.dim(0), rows = g.dim(1), cols = g.dim(2);
  be.scale_batched(g, inverse_norms(be.batched_dot(g, g)));
  if (steps <= 0) return;

  // Rows <= cols: A = X X^T and X <- aX + B X.  Otherwise A = X^T X and X <- aX + X B
  // (the transpose of the same step on X^T; B is symmetric).
  const bool wide = rows <= cols;
  const int64_t side = wide ? rows : cols;
  Tensor gram = be.empty({batch, side, side});
  Tensor poly = be.empty({batch, side, side});
  Tensor x = g, next = be.empty(g.shape());
  for (int step = 0; step < steps; ++step) {
    if (wide)
      matmul(be, x, false, x, true, gram);
    else
      matmul(be, x, true, x, false, gram);
    matmul(be, gram, false, gram, false, poly);            // A^2
    be.axpby(poly, kNewtonSchulzB, gram, kNewtonSchulzC);  // b A + c A^2
    be.copy(next, x);
    if (wide)
      matmul(be, poly, false, x, false, next, 1.0f, kNewtonSchulzA);
    else
      matmul(be, x, false, poly, false, next, 1.0f, kNewtonSchulzA);
    std::swap(x, next);
  }
  if (x.data() != g.data()) be.copy(g, x);
}

namespace {

// The iteration on C (kernels/newton_schulz.h), for up to kNewtonSchulzGramSteps steps.
void gram_iteration_add(Backend& be, const Tensor& p, const Tensor& q, int steps, Tensor& out) {
  const int64_t batch = p.dim(0), tokens = p.dim(1);
  Tensor gram_p = be.empty({batch, tokens, tokens});
  Tensor gram_q = be.empty({batch, tokens, tokens});
  matmul(be, p, false, p, true, gram_p);
  matmul(be, q, false, q, true, gram_q);

  // ||P^T Q||_F^2 = trace(P^T Q Q^T P) = sum(Gp .* Gq) (both symmetric); C starts as s I with s its inverse.
  const std::vector<float> s = inverse_norms(be.batched_dot(gram_p, gram_q));
  Tensor t = be.empty({batch, tokens, tokens}), z = be.empty(t.shape()), z2 = be.empty(t.shape());
  Tensor c = be.empty(t.shape()), next = be.empty(t.shape());
  if (steps <= 0) {
    be.fill(c, 0.0f);
    be.add_scaled_identity(c, 1.0f);
    be.scale_batched(c, s);
  }
  for (int step = 0; step < steps; ++step) {
    if (step == 0) {  // C = s I: R = s^2 Gp, Z = s^2 Gq Gp, and C q(Z) = s q(Z), two products where a step takes five
      std::vector<float> s2(s.size());
      for (size_t i = 0; i < s.size(); ++i) s2[i] = s[i] * s[i];
      be.copy(t, gram_p);
      be.scale_batched(t, s2);                 // R, scaled before the product as C's scale was
      matmul(be, gram_q, false, t, false, z);  // Z = Gq R
    } else {
      matmul(be, gram_p, false, c, false, t);   // Gp C
      matmul(be, c, true, t, false, z2);        // R = C^T Gp C
      matmul(be, gram_q, false, z2, false, z);  // Z = Gq R
    }
    matmul(be, z, false, z, false, z2);               // Z^2
    be.axpby(z2, kNewtonSchulzB, z, kNewtonSchulzC);  // b Z + c Z^2
    be.add_scaled_identity(z2, kNewtonSchulzA);       // + a I
    if (step == 0) {
      be.scale_batched(z2, s);  // C <- s (aI + bZ + cZ^2)
      std::swap(c, z2);
    } else {
      matmul(be, c, false, z2, false, next);  // C <- C (aI + bZ + cZ^2)
      std::swap(c, next);
    }
  }
  Tensor cq = be.empty(q.shape());
  matmul(be, c, false, q, false, cq);
  matmul(be, p, true, cq, false, out, 1.0f, 1.0f);
}

// Pivoted Cholesky of the symmetric n x n matrix `a` (row-major, both triangles kept), in place: on return
// (pivot^T a pivot)'s factor L [n, rank] is a's lower part in pivoted order. Stops at the first pivot below
// LAPACK's default tolerance (n ulp of the largest diagonal), which a dependent token leaves at round-off.
int64_t pivoted_cholesky(std::vector<double>& a, int64_t n, std::vector<int64_t>& pivot) {
  pivot.resize(n);
  for (int64_t i = 0; i < n; ++i) pivot[i] = i;
  double largest = 0;
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, a[i * n + i]);
  const double tolerance = double(n) * DBL_EPSILON * largest;
  for (int64_t k = 0; k < n; ++k) {
    int64_t best = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (a[i * n + i] > a[best * n + best]) best = i;
    if (!(a[best * n + best] > tolerance)) return k;
    if (best != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[best * n + j]);
      for (int64_t i = 0; i < n; ++i) std::swap(a[i * n + k], a[i * n + best]);
      std::swap(pivot[k], pivot[best]);
    }
    const double diagonal = std::sqrt(a[k * n + k]);
    a[k * n + k] = diagonal;
    for (int64_t i = k + 1; i < n; ++i) a[k * n + i] = a[i * n + k] /= diagonal;
    for (int64_t i = k + 1; i < n; ++i) {
      const double l = a[i * n + k];
      for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= l * a[k * n + j];
    }
  }
  return n;
}

// X [tokens, side] (a token a row) = F U^T with U [side, rank] orthonormal, in double.
struct TokenBasis {
  int64_t rank = 0;
  std::vector<double> factor;   // F [tokens, rank]: X X^T = F F^T
  std::vector<double> basis_t;  // U^T [rank, side]
};

TokenBasis token_basis(const float* x, int64_t tokens, int64_t side) {
  const int n = int(tokens), m = int(side);
  const std::vector<double> xd(x, x + tokens * side);
  std::vector<double> gram(size_t(tokens) * tokens);
  cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, m, 1.0, xd.data(), m, 0.0, gram.data(), n);
  for (int64_t i = 0; i < tokens; ++i)
    for (int64_t j = i + 1; j < tokens; ++j) gram[i * tokens + j] = gram[j * tokens + i];
  std::vector<int64_t> pivot;
  TokenBasis b;
  b.rank = pivoted_cholesky(gram, tokens, pivot);
  const int64_t r = b.rank;
  b.factor.assign(size_t(tokens) * r, 0.0);
  for (int64_t k = 0; k < tokens; ++k)
    for (int64_t c = 0; c <= std::min(k, r - 1); ++c) b.factor[pivot[k] * r + c] = gram[k * tokens + c];
  // The first `rank` pivoted tokens are L11 U^T: U^T = L11^-1 X_1.
  b.basis_t.resize(size_t(r) * side);
  for (int64_t k = 0; k < r; ++k) std::copy_n(xd.begin() + pivot[k] * side, side, b.basis_t.begin() + k * side);
  if (r > 0)
    cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, int(r), m, 1.0, gram.data(), n,
                b.basis_t.data(), m);
  return b;
}

// The route past kNewtonSchulzGramSteps: P^T Q = U_p (F_p^T F_q) U_q^T, Newton-Schulz on M = F_p^T F_q (its
// singular values are P^T Q's nonzero ones; the Frobenius norm the same), then out += U_p NS(M) U_q^T. Each
// batch's ranks may differ: M and the bases are padded with zeros, which the iteration keeps at zero.
void orthonormal_basis_add(Backend& be, const Tensor& p, const Tensor& q, int steps, Tensor& out) {
  const int64_t batch = p.dim(0), tokens = p.dim(1), rows = p.dim(2), cols = q.dim(2);
  const std::vector<float> host_p = be.to_host(p), host_q = be.to_host(q);
  std::vector<TokenBasis> bp, bq;
  int64_t rp = 0, rq = 0;
  for (int64_t b = 0; b < batch; ++b) {
    bp.push_back(token_basis(host_p.data() + b * tokens * rows, tokens, rows));
    bq.push_back(token_basis(host_q.data() + b * tokens * cols, tokens, cols));
    rp = std::max(rp, bp.back().rank), rq = std::max(rq, bq.back().rank);
  }
  if (rp == 0 || rq == 0) return;  // P^T Q = 0 in every batch, and NS(0) = 0
  std::vector<float> m(size_t(batch) * rp * rq, 0.0f), up(size_t(batch) * rp * rows, 0.0f);
  std::vector<float> uq(size_t(batch) * rq * cols, 0.0f);
  std::vector<double> mb;
  for (int64_t b = 0; b < batch; ++b) {
    const TokenBasis &x = bp[b], &y = bq[b];
    mb.assign(size_t(x.rank) * y.rank, 0.0);
    if (x.rank > 0 && y.rank > 0)
      cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(x.rank), int(y.rank), int(tokens), 1.0, x.factor.data(),
                  int(x.rank), y.factor.data(), int(y.rank), 0.0, mb.data(), int(y.rank));
    for (int64_t i = 0; i < x.rank; ++i)
      for (int64_t j = 0; j < y.rank; ++j) m[(b * rp + i) * rq + j] = float(mb[i * y.rank + j]);
    std::copy(x.basis_t.begin(), x.basis_t.end(), up.begin() + b * rp * rows);
    std::copy(y.basis_t.begin(), y.basis_t.end(), uq.begin() + b * rq * cols);
  }
  Tensor tm = be.from_host({batch, rp, rq}, m.data());
  newton_schulz5(be, tm, steps);
  const Tensor tu_p = be.from_host({batch, rp, rows}, up.data()), tu_q = be.from_host({batch, rq, cols}, uq.data());
  Tensor t = be.empty({batch, rp, cols});
  matmul(be, tm, false, tu_q, false, t);              // NS(M) U_q^T
  matmul(be, tu_p, true, t, false, out, 1.0f, 1.0f);  // out += U_p NS(M) U_q^T
}

}  // namespace

void newton_schulz5_low_rank_add(Backend& be, const Tensor& p, const Tensor& q, int steps, Tensor& out) {
  if (steps <= kNewtonSchulzGramSteps)
    gram_iteration_add(be, p, q, steps, out);
  else
    orthonormal_basis_add(be, p, q, steps, out);
}

}  // namespace lact
