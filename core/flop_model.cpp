#include "core/flop_model.h"

#include <algorithm>

#include "kernels/newton_schulz.h"

namespace lact {

double encode_flops(const ModelConfig& config, int64_t input_tokens, int64_t tokens_per_view) {
  const double n = static_cast<double>(input_tokens), dim = config.dim;
  double total = 2.0 * n * config.input_channels() * dim;
  for (const ModuleConfig& m : config.block) {
    double per_layer = 0;
    const double hidden = m.hidden(config.dim);
    switch (m.kind) {
      case ModuleKind::WindowAttention:
        per_layer = 2.0 * n * dim * 4 * dim + 4.0 * n * tokens_per_view * dim;
        break;
      case ModuleKind::GlobalAttention:
        per_layer = 2.0 * n * dim * 4 * dim + 4.0 * n * n * dim;
        break;
      case ModuleKind::Mlp:
        per_layer = 4.0 * n * dim * hidden;
        break;
      case ModuleKind::FastWeightTTT: {
        const double heads = m.heads(config.dim), d = m.head_dim;
        const int64_t h = static_cast<int64_t>(hidden), dd = m.head_dim;
        // projections + key forward and backward (3 products) + apply (3 products)
        per_layer = 2.0 * n * dim * 4 * dim + heads * 6.0 * (2.0 * n * d * hidden);
        const double ns = std::min(newton_schulz_dense_flops(input_tokens, dd, h, m.muon_update_steps),
                                   newton_schulz_low_rank_flops(input_tokens, dd, h, m.muon_update_steps));
        per_layer += heads * 3.0 * ns;
        break;
      }
    }
    total += per_layer * config.layers;
  }
  return total;
}

double render_flops(const ModelConfig& config, int64_t tokens_per_view, int64_t input_tokens) {
  const double n = static_cast<double>(tokens_per_view), dim = config.dim;
  double total = 2.0 * n * config.input_channels() * dim + 2.0 * n * dim * config.output_channels();
  for (const ModuleConfig& m : config.block) {
    const double hidden = m.hidden(config.dim);
    double per_layer = 0;
    switch (m.kind) {
      case ModuleKind::WindowAttention:
        per_layer = 2.0 * n * dim * 4 * dim + 4.0 * n * n * dim;
        break;
      case ModuleKind::GlobalAttention:
        per_layer = 2.0 * n * dim * 4 * dim + 4.0 * n * (n + static_cast<double>(input_tokens)) * dim;
        break;
      case ModuleKind::Mlp:
        per_layer = 4.0 * n * dim * hidden;
        break;
      case ModuleKind::FastWeightTTT:
        per_layer = 2.0 * n * dim * 2 * dim + m.heads(config.dim) * 3.0 * (2.0 * n * m.head_dim * hidden);
        break;
    }
    total += per_layer * config.layers;
  }
  return total;
}

}  // namespace lact
