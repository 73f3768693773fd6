#include "core/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "kernels/newton_schulz.h"

namespace lact {

namespace {
constexpr double kFloat = sizeof(float);

// A byte or element count as int64, saturated (the largest value means "more than any machine has").
int64_t saturate(double value) {
  constexpr double kMax = 9.0e18;  // below INT64_MAX (9.22e18), exactly representable as a double
  return value >= kMax ? static_cast<int64_t>(kMax) : static_cast<int64_t>(value);
}

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ll << 30));
  return text;
}
}  // namespace

EncodeMemory estimate_encode_memory(const ModelConfig& config, const ModelOptions& options, int64_t views,
                                    int height, int width) {
  // Counted in double so that no flag (--size 8x2147483640, 2e9 views) can overflow it; saturated at the end.
  const int64_t patch = std::max(1, config.patch_size);
  const double dim = config.dim;
  const double per_view = static_cast<double>(std::max(0, height) / patch) * static_cast<double>(std::max(0, width) / patch);
  const double tokens = static_cast<double>(std::max<int64_t>(0, views)) * per_view;
  const double tile = static_cast<double>(std::max<int64_t>(1, options.token_tile));
  // Token-wise modules run on chunks of whole views of at most `tile` tokens (at least one view).
  const double chunk = std::min(tokens, std::max(1.0, std::floor(tile / std::max(1.0, per_view))) * per_view);

  EncodeMemory m;
  m.tokens = saturate(tokens);
  // Embedding: the input pixels, their ray tokens and the embedded tokens, alive together.
  m.embedding = saturate(tokens * (3.0 * patch * patch + config.input_channels() + dim) * kFloat);
  m.activations = saturate(3 * tokens * dim * kFloat);

  double scratch = 0;
  for (const ModuleConfig& mc : config.block) {
    const double heads = mc.heads(config.dim), hd = mc.head_dim, hidden = mc.hidden(config.dim);
    double need = 0;
    switch (mc.kind) {
      case ModuleKind::WindowAttention:
        // qkv + q, k, v (qkv is freed before attention); attended, merged.
        need = std::max(3 * chunk * dim + 3 * chunk * dim, 3 * chunk * dim + 2 * chunk * dim);
        break;
      case ModuleKind::Mlp:
        need = chunk * hidden;
        break;
      case ModuleKind::GlobalAttention:
        // qkv + per-view q, k, v; then keys (inputs + one view) for every head, attended, merged.
        need = 6 * tokens * dim + 2 * (tokens + per_view) * dim + 2 * tokens * dim;
        break;
      case ModuleKind::FastWeightTTT: {
        const double weights = 3 * heads * hd * hidden;  // one set of w0, w1, w2
        const double projections = 3 * tokens * dim + tokens * 3 * heads;  // q, k, v, lr (kept through the update)
        const double project_peak = 3 * tokens * dim;                      // the qkv product while splitting
        const double n = std::min(tokens, tile);
        // The route ttt_update takes (the same rule).
        const int steps = mc.muon_update_steps;
        bool low_rank = options.newton_schulz == NewtonSchulzRoute::LowRank;
        if (options.newton_schulz == NewtonSchulzRoute::Auto)
          low_rank = steps > 0 && tokens <= tile &&
                     newton_schulz_low_rank_flops(int64_t(tokens), int64_t(hd), int64_t(hidden), steps) <
                         newton_schulz_dense_flops(int64_t(tokens), int64_t(hd), int64_t(hidden), steps);
        double update = 0;
        if (low_rank) {
          // Directions of all tokens, then per weight: 2 grams + C + t, z, z2, next (token x token), C Q.
          update = 3 * heads * tokens * hidden + weights / 3 + 7 * heads * tokens * tokens + heads * tokens * hd;
        } else {
          // Summed directions, one tile's directions; then Newton-Schulz on the smaller side with the copy.
          const double side = std::min(hd, hidden);
          update = weights + std::max(3 * heads * n * hidden, 2 * heads * side * side + heads * hd * hidden + weights);
        }
        // Apply: o, the gate and up tiles, then merged (the projections still alive).
        const double apply = tokens * dim + 2 * heads * n * hidden + tokens * dim;
        need = projections + std::max({project_peak, update, apply});
        break;
      }
    }
    scratch = std::max(scratch, need);
  }
  m.temporaries = saturate(scratch * kFloat);

  double state = 0;
  for (const ModuleConfig& mc : config.block) {
    if (mc.kind == ModuleKind::FastWeightTTT)
      state += 3.0 * mc.heads(config.dim) * mc.head_dim * mc.hidden(config.dim);
    if (mc.kind == ModuleKind::GlobalAttention) state += 2 * tokens * dim;
  }
  m.state = saturate(state * config.layers * kFloat);
  return m;
}

void check_encode_fits(const EncodeMemory& need, int64_t available, const std::string& device) {
  if (available < 0 || need.total() <= available) return;
  throw Error("encoding " + std::to_string(need.tokens) + " tokens needs about " + gib(need.total()) +
              " (activations " + gib(need.activations) + ", scratch " + gib(need.temporaries) + ", state " +
              gib(need.state) + ") but " + device + " has " + gib(available) +
              " available: use fewer or smaller input views");
}

}  // namespace lact
