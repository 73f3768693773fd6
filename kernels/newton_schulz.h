// Newton-Schulz orthogonalisation as the LaCT TTT layer uses it (Muon's quintic iteration):
//   X <- G / (||G||_F + 1e-7);  repeat: A = X X^T;  X <- a X + (b A + c A^2) X
// with the fixed coefficients (a, b, c) = (3.4445, -4.7750, 2.0315), on the smaller Gram side.
// Written against the Backend ops so every backend gets it; fp32 throughout (the reference).
#pragma once

#include "kernels/backend.h"
#include "kernels/newton_schulz_flops.h"

namespace lact {

constexpr float kNewtonSchulzA = 3.4445f;
constexpr float kNewtonSchulzB = -4.7750f;
constexpr float kNewtonSchulzC = 2.0315f;

// In place on g [batch, rows, cols].
void newton_schulz5(Backend& be, Tensor& g, int steps);

// out[b] += NS(P[b]^T Q[b]) for P [batch, N, rows], Q [batch, N, cols], without forming the
// rows x cols matrix until the end. Every iterate has the form P^T C Q with C an N x N matrix:
//   A X = P^T C Z Q  and  A^2 X = P^T C Z^2 Q,  with  Z = (Q Q^T) C^T (P P^T) C,
// so the iteration runs on N x N matrices, exactly (up to rounding) the same map. Worth it when the
// token count N is below the matrix sides. C is blind to the tokens' dependent combinations (the null space
// of P P^T or Q Q^T, which the sides' few tokens and float32 Gram matrices make common): there C grows by a
// = 3.4445 a step and nothing pulls it back, so past kNewtonSchulzGramSteps (C up to 3.4^5 ~ 480 times its
// start: within float32's tolerance) the route instead factors P^T = U_p L_p^T, Q^T = U_q L_q^T in double
// (U orthonormal, rank-revealing pivoted Cholesky of the Gram matrices) and iterates on the r_p x r_q matrix
// M = L_p^T L_q with NS(P^T Q) = U_p NS(M) U_q^T: the dense iteration itself, on the tokens' span only.
void newton_schulz5_low_rank_add(Backend& be, const Tensor& p, const Tensor& q, int steps, Tensor& out);

}  // namespace lact
