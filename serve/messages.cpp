#include "serve/messages.h"

#include <cmath>
#include <filesystem>

#include "datasets/camera_path_io.h"
#include "system/utf8_text.h"

namespace lact::serve {

namespace {

nlohmann::json vec3_json(const Vec3& v) { return nlohmann::json::array({v[0], v[1], v[2]}); }

nlohmann::json model_summary(const session::SceneSource& source) {
  const Model& model = *source.model;
  return {{"file", utf8_escaped(std::filesystem::path(source.model_path).filename().string())},
          {"layers", model.config().layers},
          {"dim", model.config().dim},
          {"patch", model.config().patch_size},
          {"parameters", model.weights().parameter_count}};
}

}  // namespace

nlohmann::json scene_description(const session::SceneSource& source, const session::SceneFrame& frame,
                                 const RenderLimits& limits) {
  nlohmann::json views = nlohmann::json::array(), warnings = nlohmann::json::array();
  for (const std::string& w : source.warnings) warnings.push_back(utf8_escaped(w));  // lact render's guard rails
  for (int v = 0; v < source.views(); ++v)
    views.push_back({{"index", v}, {"role", source.role(v)}, {"camera", camera_to_json(source.cameras[v])}});
  return {{"scene", utf8_escaped(source.selection.scene.name)},
          {"width", source.width},
          {"height", source.height},
          {"model", model_summary(source)},
          {"from_state", !source.state_path.empty()},
          {"state", source.state_path.empty()
                        ? nlohmann::json()
                        : nlohmann::json(utf8_escaped(std::filesystem::path(source.state_path).filename().string()))},
          {"views", views},
          {"inputs", source.selection.inputs},
          {"tests", source.targets},
          {"start_view", source.start_view(-1)},
          {"warnings", warnings},
          // The error map's colour scale: white at this mean absolute error (core/metrics.h, error_heat_map's
          // default gain of 4, which the render thread uses).
          {"error_map", {{"saturation", 0.25}}},
          {"frame", {{"up", vec3_json(frame.up)}, {"pivot", vec3_json(frame.pivot)}, {"scale", frame.scale}}},
          {"limits", {{"patch", limits.patch}, {"max_side", limits.max_side}, {"max_message", limits.max_message}}}};
}

nlohmann::json frame_header(const session::RenderedView& view, const std::string& format, double fps) {
  nlohmann::json out{{"type", "frame"},
                     {"serial", view.serial},
                     {"width", view.image.width},
                     {"height", view.image.height},
                     {"format", format},
                     {"render_ms", 1000 * view.render_seconds},
                     {"fps", fps},
                     {"view", view.request.view},
                     {"images", nlohmann::json::array()}};
  if (view.measured) {
    out["psnr"] = view.psnr;
    out["ssim"] = view.ssim;
    if (view.nearest_input >= 0) {
      out["nearest_input"] = view.nearest_input;
      out["psnr_nearest_input"] = view.psnr_nearest_input;
    }
    // With LPIPS weights (--lpips, or those `lact model fetch lpips` cached): lower is closer.
    if (view.lpips) out["lpips"] = *view.lpips;
    if (view.lpips_nearest_input) out["lpips_nearest_input"] = *view.lpips_nearest_input;
  }
  if (!view.truth_error.empty()) out["truth_error"] = view.truth_error;
  return out;
}

}  // namespace lact::serve
