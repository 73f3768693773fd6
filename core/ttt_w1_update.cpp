// The W1-only updates of the linear-attention variants (V1-V6, Liu et al. 2026), as the authors' ablation
// code computes them: W0 and W2 stay the checkpoint's, phi(k) = silu(k W0) * (k W2) (or phi(k) = k for
// straight_qk), and
//   W1' = [weight_norm](W1 + [NS](phi(K)^T diag(eta) V))
// The sum over tokens is a plain reduction, so it splits over token tiles, views and processes exactly;
// Newton-Schulz and weight norm run once on the total.
#include <algorithm>

#include "core/layers.h"
#include "kernels/newton_schulz.h"

namespace lact {

namespace {

// Rows [begin, end) of every head of t, copied out [heads, n, cols].
Tensor rows_copy(Backend& be, const Tensor& t, int64_t begin, int64_t end) {
  const int64_t heads = t.dim(0), rows = t.dim(1), cols = t.dim(2), n = end - begin;
  Tensor out = be.empty({heads, n, cols});
  be.copy_blocks(out.data(), n * cols, t.data() + begin * cols, rows * cols, n * cols, heads);
  return out;
}

}  // namespace

Tensor ttt_key_features(Backend& be, const TttParams& config, const TttWeights& w, const TttProjections& p,
                        int64_t begin, int64_t end) {
  const int64_t heads = p.k.dim(0), d = p.k.dim(2), n = end - begin;
  Tensor phi;
  if (config.variant.straight_qk) {
    phi = rows_copy(be, p.k, begin, end);
  } else {
    const int64_t hidden = w.w1.dim(1);
    phi = be.empty({heads, n, hidden});
    Tensor up = be.empty({heads, n, hidden});
    const MatrixOperand k = rows_from(p.k, begin);  // W0 and W2: the column blocks of [W0|W2]
    be.gemm(false, false, n, hidden, d, 1.0f, k, column_block(w.w02, 0), 0.0f, phi.data(), hidden, n * hidden, heads);
    be.gemm(false, false, n, hidden, d, 1.0f, k, column_block(w.w02, hidden), 0.0f, up.data(), hidden, n * hidden,
            heads);
    be.swiglu(phi, up, phi);
  }
  if (config.variant.lr1) be.scale_rows(phi, p.lr.data() + begin * 3 * heads + heads, 1, 3 * heads);  // lr1 of head h
  return phi;
}

void ttt_accumulate_w1(Backend& be, const TttParams& config, const TttWeights& w, const TttProjections& p,
                       int64_t begin, int64_t end, Tensor& dw1) {
  const int64_t heads = p.k.dim(0), d = p.k.dim(2), n = end - begin;
  if (n <= 0) return;
  const Tensor phi = ttt_key_features(be, config, w, p, begin, end);
  const int64_t side = phi.dim(2);
  be.gemm(true, false, side, d, n, 1.0f, whole(phi), rows_from(p.v, begin), 1.0f, dw1.data(), d, side * d, heads);
}

Tensor ttt_finish_w1(Backend& be, const TttParams& config, const TttWeights& w, Tensor& dw1) {
  if (config.variant.muon) newton_schulz5(be, dw1, config.muon_update_steps);
  Tensor w1 = be.empty(w.w1.shape());
  be.copy(w1, w.w1);
  be.add(w1, dw1);
  if (config.variant.weight_norm) be.restore_column_norms(w1, w.w1_norms, kWeightNormEps);
  return w1;
}

namespace {

// The inner loss's gradient step as the authors' code takes it, not the linear-attention form: for a SwiGLU
// phi the baseline's whole inner forward and backward (all three directions; W0's and W2's are dropped, as
// `only_w1` zeroes them), for straight_qk the gradient of -sum eta <k W1, v>, G = K^T (-diag(eta) V), then
// W1 - NS(G).
Tensor gradient_step_w1(Backend& be, const TttParams& config, const TttWeights& w, const TttProjections& p,
                        int64_t token_tile, Collective* collective) {
  const int64_t tokens = p.k.dim(1), heads = p.k.dim(0), d = p.k.dim(2);
  Tensor direction = be.zeros(w.w1.shape());
  if (!config.variant.straight_qk) {
    const FastWeights initial = initial_fast_weights(w);
    FastWeights dw{be.zeros(w.w02.shape()), direction};
    for (int64_t begin = 0; begin < tokens; begin += token_tile)
      ttt_accumulate_directions(be, initial, p, begin, std::min(tokens, begin + token_tile), dw);
    if (collective) collective->all_reduce_sum(be, direction);
    return ttt_finish_w1(be, config, w, direction);
  }
  Tensor gradient = be.zeros(w.w1.shape());
  for (int64_t begin = 0; begin < tokens; begin += token_tile) {
    const int64_t end = std::min(tokens, begin + token_tile), n = end - begin;
    Tensor dloss_df = rows_copy(be, p.v, begin, end);  // dL/df = -eta v
    if (config.variant.lr1) be.scale_rows(dloss_df, p.lr.data() + begin * 3 * heads + heads, 1, 3 * heads);
    be.gemm(true, false, d, d, n, -1.0f, rows_from(p.k, begin), whole(dloss_df), 1.0f, gradient.data(), d, d * d,
            heads);
  }
  if (collective) collective->all_reduce_sum(be, gradient);
  if (config.variant.muon) newton_schulz5(be, gradient, config.muon_update_steps);
  Tensor w1 = be.empty(w.w1.shape());
  be.copy(w1, w.w1);
  be.axpby(w1, -1.0f, gradient, 1.0f);
  if (config.variant.weight_norm) be.restore_column_norms(w1, w.w1_norms, kWeightNormEps);
  return w1;
}

}  // namespace

Tensor ttt_update_w1(Backend& be, const TttParams& config, const TttWeights& w, const TttProjections& p,
                     const ModelOptions& options, Collective* collective) {
  if (options.ttt_update_form == TttUpdateForm::GradientStep)
    return gradient_step_w1(be, config, w, p, options.token_tile, collective);
  const int64_t local = p.k.dim(1), d = p.k.dim(2), side = w.w1.dim(1);
  const int64_t tokens = sum_over_ranks(collective, local);
  const int steps = config.muon_update_steps;
  if (config.variant.muon && steps > 0 &&
      ttt_low_rank_route(options.newton_schulz, tokens, options.token_tile, side, d, steps)) {
    // Newton-Schulz of phi^T V on token x token matrices (fewer tokens than the matrix sides); across ranks
    // on the gathered factors.
    const Tensor phi = gather_token_rows(be, collective, ttt_key_features(be, config, w, p, 0, local));
    Tensor w1 = be.empty(w.w1.shape());
    be.copy(w1, w.w1);
    newton_schulz5_low_rank_add(be, phi, gather_token_rows(be, collective, p.v), steps, w1);
    if (config.variant.weight_norm) be.restore_column_norms(w1, w.w1_norms, kWeightNormEps);
    return w1;
  }
  Tensor dw1 = be.zeros(w.w1.shape());
  for (int64_t begin = 0; begin < local; begin += options.token_tile)
    ttt_accumulate_w1(be, config, w, p, begin, std::min(local, begin + options.token_tile), dw1);
  if (collective) collective->all_reduce_sum(be, dw1);
  return ttt_finish_w1(be, config, w, dw1);
}

}  // namespace lact
