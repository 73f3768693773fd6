// What `lact serve` and its clients say to each other, as JSON (docs/serve.md's API), with no network code: the
// scene description (GET /api/scene, the stream's first message), a client's camera message checked as
// untrusted input, and the header of a streamed frame. Unit-tested by tests/test_serve.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "session/camera_controller.h"
#include "session/render_thread.h"
#include "session/scene_source.h"

namespace lact::serve {

// What a client may ask of a render.
struct RenderLimits {
  int patch = 8;               // every side a multiple of it
  int max_side = 1024;         // pixels
  size_t max_message = 65536;  // bytes of one message or request body
};

// The scene: name, working size, model summary (no file-system path), the views with their roles and cameras
// (lact camera-path frames), the orbit frame (up, pivot, scale), the limits, and whether it is ready.
nlohmann::json scene_description(const session::SceneSource& source, const session::SceneFrame& frame,
                                 const RenderLimits& limits);

// One frame of a lact camera path ({c2w, fx, fy, cx, cy, w, h}) from a client, checked as a file's frame is and
// renderable: each side a multiple of the patch and at most max_side. Error naming the field otherwise.
Camera client_camera(const nlohmann::json& frame, const RenderLimits& limits, const std::string& where);

// A stream message: {"type": "camera", "camera": {frame}, "view": V, "moving": bool, "truth": bool,
// "error": bool}. `view` is a hint: the request is measured as scene view V only when the camera is exactly it.
struct CameraMessage {
  session::RenderRequest request;     // tag: the flags below
  bool moving = false;                // JPEG while moving, PNG at rest
  bool truth = false, error = false;  // also send the ground truth / error map of a measured view
};
// Parses text (JSON at most limits.max_message bytes); Error("message", ...) for anything else.
CameraMessage parse_camera_message(const std::string& text, const session::SceneSource& source,
                                   const RenderLimits& limits);

// The flags of a request's tag.
int64_t camera_tag(bool moving, bool truth, bool error);
bool tag_moving(int64_t tag);
bool tag_truth(int64_t tag);
bool tag_error(int64_t tag);

// The JSON header of a streamed frame: serial, size, format, render ms, and when measured PSNR, SSIM and the
// nearest-input baseline; `images` lists the images that follow it and their byte sizes.
nlohmann::json frame_header(const session::RenderedView& view, const std::string& format, double fps);

}  // namespace lact::serve
