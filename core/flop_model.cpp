#include "core/flop_model.h"

#include "core/module_kind.h"

namespace lact {

double encode_flops(const ModelConfig& config, int64_t input_tokens, int64_t tokens_per_view) {
  const double n = static_cast<double>(input_tokens);
  double total = 2.0 * n * config.input_channels() * config.dim;
  for (const ModuleConfig& m : config.block)
    total += m.kind->encode_flops(config, m, n, static_cast<double>(tokens_per_view)) * config.layers;
  return total;
}

double render_flops(const ModelConfig& config, int64_t tokens_per_view, int64_t input_tokens) {
  const double n = static_cast<double>(tokens_per_view);
  double total = 2.0 * n * config.input_channels() * config.dim + 2.0 * n * config.dim * config.output_channels();
  for (const ModuleConfig& m : config.block)
    total += m.kind->render_flops(config, m, n, static_cast<double>(input_tokens)) * config.layers;
  return total;
}

}  // namespace lact
