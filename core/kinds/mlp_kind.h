// model.MLP's parameters: c_proj(GELU(c_fc(y))) with hidden int(dim * inter_multi).
#pragma once

#include "core/module_kind.h"

namespace lact {

struct MlpParams : ModuleParams {
  double inter_multi = 4;
  int hidden(int dim) const { return static_cast<int>(dim * inter_multi); }
};

}  // namespace lact
