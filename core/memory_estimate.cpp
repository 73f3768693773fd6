#include "core/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/block_module.h"

namespace lact {

namespace {
constexpr double kFloat = sizeof(float);

// A byte or element count as int64, saturated (the largest value means "more than any machine has").
int64_t saturate(double value) {
  constexpr double kMax = 9.0e18;  // below INT64_MAX (9.22e18), exactly representable as a double
  return value >= kMax ? static_cast<int64_t>(kMax) : static_cast<int64_t>(value);
}

// GiB, or MiB below 0.1 GiB (small scenes and small --memory-limit values stay readable).
std::string gib(int64_t bytes) {
  char text[32];
  if (bytes < (1ll << 30) / 10)
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1ll << 20));
  else
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ll << 30));
  return text;
}
}  // namespace

EncodeMemory estimate_encode_memory(const ModelConfig& config, const ModelOptions& options, int64_t views,
                                    int height, int width, int64_t state_views) {
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
  for (const ModuleConfig& mc : config.block)
    scratch = std::max(scratch, block_module(mc.kind).encode_scratch_floats(config, mc, options, tokens, per_view, chunk));
  m.temporaries = saturate(scratch * kFloat);
  double state = 0;  // in double: a KV cache of a saturated token count must not overflow
  const double state_tokens = state_views < 0 ? tokens : static_cast<double>(state_views) * per_view;
  for (const ModuleConfig& mc : config.block)
    for (const auto& entry : block_module(mc.kind).state_tensors(config, mc, saturate(state_tokens))) {
      double floats = 1;
      for (int64_t side : entry.second) floats *= static_cast<double>(side);
      state += floats;
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
