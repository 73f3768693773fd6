#include "pipeline/time_estimate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/flop_model.h"

namespace lact {

double work_flops(const ModelConfig& config, const WorkSize& work) {
  const int patch = config.patch_size;
  const int64_t per_view = static_cast<int64_t>(work.height / patch) * (work.width / patch);
  double flops = 0;
  if (work.encode_views > 0) flops += encode_flops(config, work.encode_views * per_view, per_view);
  for (const WorkSize::Renders& r : work.renders) {
    const int64_t target = static_cast<int64_t>(r.height / patch) * (r.width / patch);
    flops += static_cast<double>(r.views) * render_flops(config, target, work.state_views * per_view);
  }
  return flops;
}

std::string work_text(const WorkSize& work) {
  std::string text;
  if (work.encode_views > 0)
    text = "encoding " + std::to_string(work.encode_views) + (work.encode_views > 1 ? " views at " : " view at ") +
           std::to_string(work.height) + "x" + std::to_string(work.width);
  int64_t rendered = 0;
  for (const WorkSize::Renders& r : work.renders) rendered += r.views;
  if (rendered > 0)
    text += (text.empty() ? "rendering " : " and rendering ") + std::to_string(rendered) +
            (rendered > 1 ? " views" : " view");
  if (rendered > 0 && work.renders.size() == 1)
    text += " at " + std::to_string(work.renders[0].height) + "x" + std::to_string(work.renders[0].width);
  return text;
}

double model_gflops(const Model& model) {
  const int side = 16 * model.config().patch_size;
  PosedImage view;
  view.image = Image{side, side, std::vector<float>(static_cast<size_t>(side) * side * 3, 0.5f)};
  Camera& c = view.camera;
  c.width = c.height = side;
  c.fx = c.fy = static_cast<float>(side), c.cx = c.cy = static_cast<float>(side) / 2;
  c.c2w = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -2, 0, 0, 0, 1};  // at z = -2, looking at the origin
  model.encode({view});
  model.backend().synchronize();
  const auto start = std::chrono::steady_clock::now();
  model.encode({view});
  model.backend().synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WorkSize probe;
  probe.encode_views = probe.state_views = 1;
  probe.height = probe.width = side;
  return work_flops(model.config(), probe) / std::max(seconds, 1e-9) / 1e9;
}

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 10)
    std::snprintf(text, sizeof text, "%.2g s", seconds);
  else if (seconds < 90)
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 90 * 60)
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  else
    std::snprintf(text, sizeof text, seconds < 100 * 3600 ? "%.1f h" : "%.0f h", seconds / 3600);
  return text;
}

}  // namespace lact
