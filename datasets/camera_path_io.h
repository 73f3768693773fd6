// Camera path files (`lact path` writes them, `lact render --path` and the viewer read them):
//   {"format": "lact camera path v1",
//    "frames": [{"c2w": [[...4x4, OpenCV camera-to-world...]], "fx": .., "fy": .., "cx": .., "cy": ..,
//                "w": .., "h": ..}, ...]}
// Intrinsics are pixels at w x h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/camera.h"

namespace lact {

nlohmann::json camera_to_json(const Camera& camera);
// One frame of a path ({c2w, fx, fy, cx, cy, w, h}) checked as read_camera_path checks it (`lact serve` reads
// them from its clients); Error(where, ...) naming the field.
Camera camera_from_json(const nlohmann::json& frame, const std::string& where);
void write_camera_path(const std::string& path, const std::vector<Camera>& frames);
// Errors name the file and the frame.
std::vector<Camera> read_camera_path(const std::string& path);

}  // namespace lact
