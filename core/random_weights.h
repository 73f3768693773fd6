// A model with random weights for a config (benchmarks and tests): Linear weights N(0, 0.02), norm
// weights 1, fast weights N(0, 2/fan_in) as the official initialisation, lr_fc bias 0.
#pragma once

#include <cstdint>

#include "core/weights.h"

namespace lact {

ModelWeights random_model_weights(const ModelConfig& config, Backend& backend, uint64_t seed);

}  // namespace lact
