#include "core/random_weights.h"

#include <cmath>
#include <random>

namespace lact {

ModelWeights random_model_weights(const ModelConfig& config, Backend& backend, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto read = [&](const std::string& name, const Shape& shape) {
    std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
    auto ends_with = [&](const char* suffix) {
      const std::string s(suffix);
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with("norm.weight") || ends_with("ln.weight") || name == "image_token_decoder.0.weight") {
      std::fill(values.begin(), values.end(), 1.0f);
    } else if (ends_with("lr_fc.bias")) {
      std::fill(values.begin(), values.end(), 0.0f);
    } else {
      double std = 0.02;
      if (ends_with(".w0") || ends_with(".w1") || ends_with(".w2"))
        std = std::sqrt(2.0 / static_cast<double>(shape[1]));
      std::normal_distribution<float> normal(0.0f, static_cast<float>(std));
      for (float& v : values) v = normal(rng);
    }
    return backend.from_host(shape, values.data());
  };
  return build_model_weights(config, backend, read, "random (seed " + std::to_string(seed) + ")");
}

}  // namespace lact
