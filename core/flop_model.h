// FLOPs of the model's forward passes, counted from the config (multiply-adds as 2): what `lact bench` reads
// its sustained GFLOP/s against. Matrix products only (norms and activations are a rounding error here).
#pragma once

#include <cstdint>

#include "core/config.h"

namespace lact {

// Encoding `input_tokens` tokens of views of `tokens_per_view` tokens each.
double encode_flops(const ModelConfig& config, int64_t input_tokens, int64_t tokens_per_view);
// Rendering one view of `tokens_per_view` tokens (full attention reads `input_tokens` cached keys too).
double render_flops(const ModelConfig& config, int64_t tokens_per_view, int64_t input_tokens);

}  // namespace lact
