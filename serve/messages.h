// What `lact serve` tells its clients, as JSON (docs/guide/serve.md's API), with no network code: the scene description
// (GET /api/scene, the stream's first message) and the header of a streamed frame. What clients send is read by
// serve/camera_message.h. Unit-tested by tests/unit/serve/test_serve.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "serve/camera_message.h"
#include "session/camera_controller.h"
#include "session/render_thread.h"
#include "session/scene_source.h"

namespace lact::serve {

// The scene: name, working size, model summary (no file-system path), the views with their roles and cameras
// (lact camera-path frames), the orbit frame (up, pivot, scale), the limits, and whether it is ready. Names
// that are not UTF-8 (a folder's bytes) are escaped (system/utf8_text.h).
nlohmann::json scene_description(const session::SceneSource& source, const session::SceneFrame& frame,
                                 const RenderLimits& limits);

// The JSON header of a streamed frame: serial, size, format, render ms, and when measured PSNR, SSIM, LPIPS (with
// weights) and the nearest-input baseline; `images` lists the images that follow it and their byte sizes.
nlohmann::json frame_header(const session::RenderedView& view, const std::string& format, double fps);

}  // namespace lact::serve
