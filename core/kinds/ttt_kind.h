// The large-chunk TTT layer's parameters (lact_ttt.FastWeightGluMLPMultihead, with the linear-attention
// variants' ttt_loss_type) and the route choice its update and the memory model share.
#pragma once

#include "core/module_kind.h"

namespace lact {

struct TttParams : ModuleParams {
  int head_dim = 0;           // fast-weight head dim D
  double inter_multi = 1;     // hidden d_h = int(head_dim * inter_multi)
  double base_lr = 0.01;      // the per-token learning rates' base
  int muon_update_steps = 0;  // Newton-Schulz steps on the update
  TttVariant variant;         // the authors' ttt_loss_type
  int heads(int dim) const { return dim / head_dim; }
  int hidden() const { return static_cast<int>(head_dim * inter_multi); }
};

// Whether the Newton-Schulz of a rows x cols update built from `tokens` tokens runs in the token subspace
// (newton_schulz5_low_rank_add): when the route forces it, or under Auto when the tokens fit one tile and the
// FLOP estimate says it is cheaper.
bool ttt_low_rank_route(NewtonSchulzRoute route, int64_t tokens, int64_t token_tile, int64_t rows, int64_t cols,
                        int steps);

}  // namespace lact
