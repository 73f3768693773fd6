// What a client of `lact serve` may ask to see: one camera (a lact camera-path frame), checked as untrusted input
// and as renderable, and the stream's camera message around it. Only core/ and datasets/ code: the HTTP fuzzer
// (tests/fuzz/fuzz_http.cpp) links it without a model or a session.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/camera.h"

namespace lact::serve {

// What a client may ask of a render.
struct RenderLimits {
  int patch = 8;               // every side a multiple of it
  int max_side = 1024;         // pixels
  size_t max_message = 65536;  // bytes of one message or request body
};

// One frame of a lact camera path ({c2w, fx, fy, cx, cy, w, h}) from a client, checked as a file's frame is and
// renderable: each side a multiple of the patch and at most max_side. Error naming the field otherwise.
Camera client_camera(const nlohmann::json& frame, const RenderLimits& limits, const std::string& where);

// The body of POST /api/render (JSON text: one camera-path frame) as a camera; Error("body", ...) otherwise.
Camera render_body_camera(const std::string& body, const RenderLimits& limits);

// A stream message: {"type": "camera", "camera": {frame}, "view": V, "moving": bool, "truth": bool,
// "error": bool}. `view` is a hint: the request is measured as scene view V only when the camera is exactly it.
struct CameraMessage {
  Camera camera;                      // at the render size
  int view = -1;                      // the scene view it is exactly (-1: none)
  bool moving = false;                // JPEG while moving, PNG at rest
  bool truth = false, error = false;  // also send the ground truth / error map of a measured view
};
// Parses text (JSON at most limits.max_message bytes) against the scene's views (at the working size);
// Error("message", ...) for anything else.
CameraMessage parse_camera_message(const std::string& text, const std::vector<Camera>& views,
                                   const RenderLimits& limits);

// The "scene" a request body (POST /api/render, /api/video) names: nullopt when it names none (or is no JSON
// object: its own parse says so); Error("scene", ...) for one that is not an index below `scenes`.
std::optional<int> body_scene(const std::string& body, int scenes);
// A stream message {"type": "scene", "scene": N} (the client moves to scene N): N, or nullopt for another type;
// Error("message", ...) for a bad one.
std::optional<int> scene_message(const std::string& text, int scenes, const RenderLimits& limits);

// The flags of a request's tag (what the stream sends back with a rendered view).
int64_t camera_tag(const CameraMessage& message);
bool tag_moving(int64_t tag);
bool tag_truth(int64_t tag);
bool tag_error(int64_t tag);

}  // namespace lact::serve
