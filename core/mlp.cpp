#include "core/layers.h"

namespace lact {

void mlp(Backend& be, const ModuleConfig& config, const ModuleWeights& w, const Tensor& y, Tensor& out) {
  Tensor hidden = be.empty({y.dim(0), w.fc.dim(0)});
  linear(be, y, w.fc, hidden);
  be.gelu(hidden);
  linear(be, hidden, w.out_proj, out);
}

}  // namespace lact
