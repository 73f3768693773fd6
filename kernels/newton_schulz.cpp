#include "kernels/newton_schulz.h"

#include <algorithm>
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

void newton_schulz5_low_rank_add(Backend& be, const Tensor& p, const Tensor& q, int steps, Tensor& out) {
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

}  // namespace lact
