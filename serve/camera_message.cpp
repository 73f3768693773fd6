#include "serve/camera_message.h"

#include "datasets/camera_path_io.h"
#include "session/camera_controller.h"
#include "system/error.h"

namespace lact::serve {

namespace {

bool flag(const nlohmann::json& message, const char* key) {
  if (!message.contains(key)) return false;
  if (!message.at(key).is_boolean()) throw Error("message", std::string("field '") + key + "' must be true or false");
  return message.at(key).get<bool>();
}

}  // namespace

Camera client_camera(const nlohmann::json& frame, const RenderLimits& limits, const std::string& where) {
  Camera camera = camera_from_json(frame, where);
  for (const int side : {camera.width, camera.height})
    if (side > limits.max_side || side % limits.patch)
      throw Error(where, "size " + std::to_string(camera.width) + "x" + std::to_string(camera.height) +
                             " (w x h): each side must be a multiple of " + std::to_string(limits.patch) +
                             " and at most " + std::to_string(limits.max_side) + " (--max-side)");
  return camera;
}

Camera render_body_camera(const std::string& body, const RenderLimits& limits) {
  if (body.size() > limits.max_message)
    throw Error("body", "longer than " + std::to_string(limits.max_message) + " bytes");
  const nlohmann::json frame = nlohmann::json::parse(body, nullptr, false);
  if (frame.is_discarded()) throw Error("body", "not JSON (expected one camera-path frame)");
  return client_camera(frame, limits, "body");
}

CameraMessage parse_camera_message(const std::string& text, const std::vector<Camera>& views,
                                   const RenderLimits& limits) {
  if (text.size() > limits.max_message)
    throw Error("message", "longer than " + std::to_string(limits.max_message) + " bytes");
  const nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
  if (message.is_discarded()) throw Error("message", "not JSON");
  if (!message.is_object() || !message.contains("type") || !message.at("type").is_string())
    throw Error("message", "expected an object with a \"type\"");
  if (message.at("type") != "camera") throw Error("message", "unknown type (expected \"camera\" or \"scene\")");
  if (!message.contains("camera")) throw Error("message", "no \"camera\"");
  CameraMessage out;
  out.camera = client_camera(message.at("camera"), limits, "camera");
  out.moving = flag(message, "moving");
  out.truth = flag(message, "truth");
  out.error = flag(message, "error");
  if (message.contains("view")) {
    const nlohmann::json& view = message.at("view");
    if (!view.is_number_integer()) throw Error("message", "field 'view' must be a view index");
    const int64_t v = view.get<int64_t>();
    // A hint, trusted only when the camera is exactly that view (then it is measured against its ground truth).
    if (v >= 0 && v < static_cast<int64_t>(views.size()) && session::same_camera(views[v], out.camera))
      out.view = static_cast<int>(v);
  }
  return out;
}

namespace {

int scene_index(const nlohmann::json& value, int scenes, const std::string& where) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= scenes)
    throw Error(where, "field 'scene' must be a scene index in [0, " + std::to_string(scenes) + ") (GET /api/scenes)");
  return static_cast<int>(value.get<int64_t>());
}

}  // namespace

std::optional<int> body_scene(const std::string& body, int scenes) {
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("scene")) return std::nullopt;
  return scene_index(parsed.at("scene"), scenes, "scene");
}

std::optional<int> scene_message(const std::string& text, int scenes, const RenderLimits& limits) {
  if (text.size() > limits.max_message) return std::nullopt;  // parse_camera_message refuses it
  const nlohmann::json message = nlohmann::json::parse(text, nullptr, false);
  if (message.is_discarded() || !message.is_object() || message.value("type", nlohmann::json()) != "scene")
    return std::nullopt;
  if (!message.contains("scene")) throw Error("message", "no \"scene\"");
  return scene_index(message.at("scene"), scenes, "message");
}

int64_t camera_tag(const CameraMessage& m) { return (m.moving ? 1 : 0) | (m.truth ? 2 : 0) | (m.error ? 4 : 0); }
bool tag_moving(int64_t tag) { return tag & 1; }
bool tag_truth(int64_t tag) { return tag & 2; }
bool tag_error(int64_t tag) { return tag & 4; }

}  // namespace lact::serve
