#include "kernels/newton_schulz_flops.h"

#include <algorithm>

namespace lact {

double newton_schulz_dense_flops(int64_t tokens, int64_t rows, int64_t cols, int steps) {
  const double m = static_cast<double>(std::min(rows, cols)), big = static_cast<double>(std::max(rows, cols));
  const double product = 2.0 * tokens * rows * cols;
  return product + steps * (4.0 * m * m * big + 2.0 * m * m * m);
}

double newton_schulz_low_rank_flops(int64_t tokens, int64_t rows, int64_t cols, int steps) {
  const double n = static_cast<double>(tokens);
  const double grams = 2.0 * n * n * (rows + cols);
  if (steps > kNewtonSchulzGramSteps) {
    // Orthonormal bases (in double, on the host): two pivoted Cholesky factorisations, the triangular solves for
    // U_p^T and U_q^T and M = F_p^T F_q; then the dense iteration on M (at most N x N) and U_p (NS(M) U_q^T).
    const double bases = 2.0 * n * n * n / 3.0 + n * n * (rows + cols) + 2.0 * n * n * n;
    return grams + bases + steps * 6.0 * n * n * n + 2.0 * n * n * cols + 2.0 * n * rows * cols;
  }
  const double finish = 2.0 * n * n * cols + 2.0 * n * rows * cols;
  // Five N^3 products a step, two in the first (C = s I there: kernels/newton_schulz.cpp).
  const double iterations = steps > 0 ? (4.0 + 10.0 * (steps - 1)) * n * n * n : 0.0;
  return grams + iterations + finish;
}

}  // namespace lact
