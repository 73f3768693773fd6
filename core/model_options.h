// How the model runs (not what it computes): routes, tile sizes, graph replay.
#pragma once

#include <cstdint>

namespace lact {

enum class NewtonSchulzRoute { Auto, Dense, LowRank };

// How a TTT variant whose update is a plain sum (static phi, no weight norm) builds its state:
// LinearAttention: S = W1 + NS(phi(K)^T diag(eta) V), the paper's form (the default);
// GradientStep: the inner loss's gradient step as the authors' code takes it (the check of the theorem).
enum class TttUpdateForm { LinearAttention, GradientStep };

struct ModelOptions {
  NewtonSchulzRoute newton_schulz = NewtonSchulzRoute::Auto;
  TttUpdateForm ttt_update_form = TttUpdateForm::LinearAttention;
  int64_t token_tile = 16384;  // tokens per tile in the update and in token-wise layers (bounds memory)
  bool graphs = true;          // record the render path and replay it (CUDA graphs) where the backend can
};

// The views of one tile of the TTT update's sum over tokens: whole views, at most a token tile (at least one
// view). An encode streamed in chunks of whole tiles sums the same tiles as one of all the views.
inline int64_t update_tile_views(const ModelOptions& options, int64_t tokens_per_view) {
  const int64_t views = options.token_tile / (tokens_per_view > 0 ? tokens_per_view : 1);
  return views > 1 ? views : 1;
}

}  // namespace lact
