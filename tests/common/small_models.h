// A small model config and random posed views for tests that run the whole model on the CPU.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/config.h"
#include "tests/common/test_util.h"

namespace lact::test {

// dim 64, 2 layers: window attention (heads of 16), then a TTT layer (one head of 32, or two with ttt_heads 2;
// Newton-Schulz 5 steps) or global attention, then an MLP.
inline ModelConfig small_config(bool full_attention, int ttt_inter_multi, int mlp_inter_multi = 4) {
  nlohmann::json ttt = {
      {"type", "lact_ttt.FastWeightGluMLPMultihead"},
      {"length_dim", "vl"},
      {"params", {{"head_dim", 32}, {"inter_multi", ttt_inter_multi}, {"base_lr", 0.01}, {"muon_update_steps", 5}}}};
  nlohmann::json global = {
      {"type", "lact.GlobalAttention"}, {"length_dim", "vl"}, {"params", {{"head_dim", 16}, {"use_qk_norm", true}}}};
  nlohmann::json json = {
      {"patch_size", 8},
      {"dim", 64},
      {"layers", 2},
      {"block_config",
       {{{"type", "model.SelfAttention"}, {"length_dim", "l"}, {"params", {{"head_dim", 16}, {"use_qk_norm", true}}}},
        full_attention ? global : ttt,
        {{"type", "model.MLP"}, {"length_dim", "vl"}, {"params", {{"inter_multi", mlp_inter_multi}}}}}}};
  return parse_model_config(json, "test config");
}

// `views` views of height x width with distinct camera centres and random pixels around 0.5.
inline std::vector<PosedImage> random_views(int views, int height, int width, unsigned seed = 100) {
  std::vector<PosedImage> out;
  for (int i = 0; i < views; ++i) {
    Camera c;
    c.width = width, c.height = height, c.fx = c.fy = 40, c.cx = width / 2.0, c.cy = height / 2.0;
    for (int j = 0; j < 16; ++j) c.c2w[j] = j % 5 == 0 ? 1.0 : 0.0;
    c.c2w[3] = 0.3 * i, c.c2w[11] = -2.0 - i;  // distinct camera centres
    Image img{width, height, random_values(size_t(height) * width * 3, seed + i, 0.2f)};
    for (float& p : img.rgb) p = 0.5f + p;
    out.push_back({c, img});
  }
  return out;
}

}  // namespace lact::test
