#include "bench/bench_inputs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>

#include "core/camera_geometry.h"
#include "core/config_scaling.h"
#include "system/error.h"

namespace lact::bench {

std::vector<int> parse_list(const std::string& text, const char* flag, int max) {
  std::vector<int> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;  // all of the item must be the number: "2x" or "2.5" is not 2
    try {
      values.push_back(std::stoi(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw Error(flag, "'" + text.substr(0, 40) + "' is not a list of numbers like 2,4,8");
    if (values.back() <= 0 || values.back() > max) throw Error(flag, "values must be in 1.." + std::to_string(max));
  }
  if (values.empty()) throw Error(flag, "empty list");
  return values;
}

std::vector<std::pair<int, int>> parse_size_list(const std::string& text, const char* flag, int max) {
  std::vector<std::pair<int, int>> sizes;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const size_t x = item.find_first_of("xX");
    const std::string height = item.substr(0, x), width = x == std::string::npos ? height : item.substr(x + 1);
    std::vector<int> sides;
    try {
      sides = parse_list(height + "," + width, flag, max);
    } catch (const Error&) {
      sides.clear();
    }
    if (sides.size() != 2 || height.empty() || width.empty())
      throw Error(flag, "'" + text.substr(0, 40) + "' is not a list of sizes like 128,256x512 (HxW, each side 1.." +
                            std::to_string(max) + "; N: NxN)");
    sizes.push_back({sides[0], sides[1]});
  }
  if (sizes.empty()) throw Error(flag, "empty list");
  return sizes;
}

void check_patch_divides(const std::vector<std::pair<int, int>>& sizes, int patch) {
  for (const auto& [height, width] : sizes)
    if (height % patch || width % patch)
      throw Error("--size", std::to_string(height) + "x" + std::to_string(width) +
                                " is not divisible by the patch size " + std::to_string(patch) + " of the config");
}

// The paper's config, optionally scaled: --layers N --dim D (attention heads of 64 when D allows).
ModelConfig lact_config(const BenchOptions& o) {
  return scaled_config(builtin_model_config(o.config), o.layers, o.dim);
}

// The models to time: --models (lact, full), or with --variants every listed TTT variant of the config.
std::vector<std::pair<std::string, ModelConfig>> bench_models(const BenchOptions& o, const ModelConfig& lact) {
  std::vector<std::pair<std::string, ModelConfig>> models;
  std::stringstream stream(o.variants.empty() ? o.models : o.variants);
  for (std::string m; std::getline(stream, m, ',');) {
    if (m.empty()) throw Error(o.variants.empty() ? "--models" : "--variants", "an empty item in the list");
    if (!o.variants.empty()) {
      if (!o.model.empty()) throw Error("--variants", "times random weights of a built-in config, not --model");
      const ModelConfig config = with_ttt_variant(lact, m, "--variants");
      models.push_back({config.ttt_variant().label(), config});
    } else if (m == "lact" || m == "full") {
      for (const auto& [name, config] : models)
        if (name == m) throw Error("--models", "'" + m + "' is given twice");
      models.push_back({m, m == "lact" ? lact : with_full_attention(lact)});
    } else {
      throw Error("--models", "'" + m + "' is not lact or full");
    }
  }
  // Nothing to time would print an empty table and exit 0.
  if (models.empty())
    throw Error(o.variants.empty() ? "--models" : "--variants",
                o.variants.empty() ? "empty list (lact, full or lact,full)" : "empty list (e.g. baseline,v2)");
  return models;
}

// Cameras on a circle looking at the origin; images of uniform noise.
std::vector<PosedImage> bench_views(int count, int height, int width, bool with_images, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<PosedImage> views(count);
  for (int i = 0; i < count; ++i) {
    const double angle = 2.0 * M_PI * (i + 0.5 * seed) / std::max(count, 1);
    Camera& c = views[i].camera;
    c = pinhole(width, height, 50);
    c.c2w = look_at({2.5 * std::cos(angle), 2.5 * std::sin(angle), 0.8}, {0, 0, 0}, {0, 0, 1});
    if (with_images) {
      views[i].image = Image{width, height, std::vector<float>(static_cast<size_t>(width) * height * 3)};
      for (float& v : views[i].image.rgb) v = u(rng);
    }
  }
  return views;
}

}  // namespace lact::bench
