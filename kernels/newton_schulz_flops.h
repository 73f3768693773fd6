// The FLOP estimates of the two Newton-Schulz routes (kernels/newton_schulz.h): no op, no backend, so the
// memory and FLOP models (and config parsing) use them without linking any kernel.
#pragma once

#include <cstdint>

namespace lact {

// Up to this many steps the low-rank route iterates on token Gram matrices; beyond, on orthonormal bases of the
// tokens (kernels/newton_schulz.h says why).
constexpr int kNewtonSchulzGramSteps = 5;

// FLOP estimates of the two routes for one rows x cols matrix built from N tokens (the product
// P^T Q included), used to pick the cheaper one.
double newton_schulz_dense_flops(int64_t tokens, int64_t rows, int64_t cols, int steps);
double newton_schulz_low_rank_flops(int64_t tokens, int64_t rows, int64_t cols, int steps);

}  // namespace lact
