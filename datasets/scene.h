// A posed image set in the engine's one convention (OpenCV axes, camera-to-world, pixel intrinsics at
// the size of the image on disk), whatever layout it was read from.
#pragma once

#include <string>
#include <vector>

#include "core/camera.h"

namespace lact {

struct SceneView {
  std::string image_path;  // absolute or relative to the working directory
  Camera camera;           // intrinsics at the image file's size (camera.width x camera.height)
};

struct Scene {
  std::string name;    // the folder that holds the scene's camera file
  std::string source;  // the camera file it was read from
  std::vector<SceneView> views;
};

// Reads PATH: an index JSON (a list of per-scene camera files, relative to the index), a per-scene
// camera file (LaCT `opencv_cameras.json`: a list of {w, h, fx, fy, cx, cy, w2c, file_path}), or a
// scene folder holding `opencv_cameras.json`. Errors name the file and the frame.
std::vector<Scene> read_scenes(const std::string& path);

// The scene called `name` among `scenes` (or the only one when `name` is empty).
const Scene& select_scene(const std::vector<Scene>& scenes, const std::string& name, const std::string& where);

}  // namespace lact
