#include "serve/messages.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "datasets/camera_path_io.h"

namespace lact::serve {

namespace {

nlohmann::json vec3_json(const Vec3& v) { return nlohmann::json::array({v[0], v[1], v[2]}); }

nlohmann::json model_summary(const session::SceneSource& source) {
  const Model& model = *source.model;
  return {{"file", std::filesystem::path(source.model_path).filename().string()},
          {"layers", model.config().layers},
          {"dim", model.config().dim},
          {"patch", model.config().patch_size},
          {"parameters", model.weights().parameter_count}};
}

bool flag(const nlohmann::json& message, const char* key) {
  if (!message.contains(key)) return false;
  if (!message.at(key).is_boolean()) throw Error("message", std::string("field '") + key + "' must be true or false");
  return message.at(key).get<bool>();
}

}  // namespace

nlohmann::json scene_description(const session::SceneSource& source, const session::SceneFrame& frame,
                                 const RenderLimits& limits) {
  nlohmann::json views = nlohmann::json::array();
  for (int v = 0; v < source.views(); ++v)
    views.push_back({{"index", v}, {"role", source.role(v)}, {"camera", camera_to_json(source.cameras[v])}});
  return {{"scene", source.selection.scene.name},
          {"width", source.width},
          {"height", source.height},
          {"model", model_summary(source)},
          {"from_state", !source.state_path.empty()},
          {"views", views},
          {"inputs", source.selection.inputs},
          {"tests", source.targets},
          {"start_view", source.start_view(-1)},
          {"frame", {{"up", vec3_json(frame.up)}, {"pivot", vec3_json(frame.pivot)}, {"scale", frame.scale}}},
          {"limits", {{"patch", limits.patch}, {"max_side", limits.max_side}, {"max_message", limits.max_message}}}};
}

Camera client_camera(const nlohmann::json& frame, const RenderLimits& limits, const std::string& where) {
  Camera camera = camera_from_json(frame, where);
  for (const int side : {camera.width, camera.height})
    if (side > limits.max_side || side % limits.patch)
      throw Error(where, "size " + std::to_string(camera.width) + "x" + std::to_string(camera.height) +
                             " (w x h): each side must be a multiple of " + std::to_string(limits.patch) +
                             " and at most " + std::to_string(limits.max_side) + " (--max-side)");
  return camera;
}

CameraMessage parse_camera_message(const std::string& text, const session::SceneSource& source,
                                   const RenderLimits& limits) {
  if (text.size() > limits.max_message)
    throw Error("message", "longer than " + std::to_string(limits.max_message) + " bytes");
  const nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
  if (message.is_discarded()) throw Error("message", "not JSON");
  if (!message.is_object() || !message.contains("type") || !message.at("type").is_string())
    throw Error("message", "expected an object with a \"type\"");
  if (message.at("type") != "camera") throw Error("message", "unknown type (expected \"camera\")");
  if (!message.contains("camera")) throw Error("message", "no \"camera\"");
  CameraMessage out;
  out.request.camera = client_camera(message.at("camera"), limits, "camera");
  out.moving = flag(message, "moving");
  out.truth = flag(message, "truth");
  out.error = flag(message, "error");
  if (message.contains("view")) {
    const nlohmann::json& view = message.at("view");
    if (!view.is_number_integer()) throw Error("message", "field 'view' must be a view index");
    const int64_t v = view.get<int64_t>();
    // A hint, trusted only when the camera is exactly that view (then it is measured against its ground truth).
    if (v >= 0 && v < source.views() && session::same_camera(source.cameras[v], out.request.camera))
      out.request.view = static_cast<int>(v);
  }
  out.request.tag = camera_tag(out.moving, out.truth, out.error);
  return out;
}

int64_t camera_tag(bool moving, bool truth, bool error) { return (moving ? 1 : 0) | (truth ? 2 : 0) | (error ? 4 : 0); }
bool tag_moving(int64_t tag) { return tag & 1; }
bool tag_truth(int64_t tag) { return tag & 2; }
bool tag_error(int64_t tag) { return tag & 4; }

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
  }
  if (!view.truth_error.empty()) out["truth_error"] = view.truth_error;
  return out;
}

}  // namespace lact::serve
