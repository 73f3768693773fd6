// A posed image set in the engine's one convention (OpenCV axes, camera-to-world, pixel intrinsics at
// the size the camera file states), whatever layout it was read from.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/camera.h"
#include "datasets/undistort.h"

namespace lact {

struct SceneView {
  std::string image_path;               // as resolved against the camera file's folder
  std::shared_ptr<const Image> pixels;  // in-memory pixels instead of a file (tests, generated data)
  Camera camera;                        // pinhole camera of the view (after undistortion when distorted)
  LensDistortion distortion;            // of the image on disk; distortion.any() == false: none
  Camera distorted_camera;              // the camera of the image on disk, when distorted
  std::string split;                    // "train", "val", "test" for NeRF-synthetic; empty otherwise
  int downscale = 1;                    // read from images_N (--downscale N): the file is ~N times smaller
};

struct Scene {
  std::string name;    // the folder that holds the scene's camera file (or the file's scene_name)
  std::string source;  // the camera file it was read from
  std::string layout;  // "lact" (list), "lact-dict", "lvsm", "nerfstudio", "nerf-synthetic", "colmap"
  std::vector<SceneView> views;
  std::vector<int> kmeans_inputs;  // the file's fold-8 k-means input list (Long-LRM), if any
  std::string kmeans_key;          // its key, e.g. "fold_8_kmeans_32_input"
  std::vector<std::string> notes;  // what the layout adds for `lact info`, a line each (COLMAP: cameras by model,
                                   // registered and unregistered images)
};

struct ReadOptions {
  // nerfstudio / DL3DV / COLMAP: read images from `images_N` instead of `images` (N = 2, 4, 8); intrinsics
  // follow the actual image size when the images are decoded.
  int downscale = 1;
  // COLMAP: the folder the model's image names are relative to (default: images/ beside sparse/).
  std::string images;
};

// Reads PATH and detects its layout:
//  - LaCT / LVSM index: a JSON list of per-scene camera files, or a .txt with one path per line
//    (relative to the index's folder);
//  - LaCT per-scene `opencv_cameras.json`: a list of {w, h, fx, fy, cx, cy, w2c, file_path}, or the
//    Long-LRM / converted-DL3DV dict {scene_name, frames: [...], fold_8_kmeans_N_input}, or LVSM frames
//    {image_path, fxfycxcy, w2c};
//  - nerfstudio / DL3DV / instant-ngp `transforms.json` (OpenGL camera-to-world, fl_x.., k1 k2 k3 p1 p2 or a fisheye);
//  - NeRF-synthetic `transforms_{train,val,test}.json` (camera_angle_x), or a folder holding them;
//  - a folder holding `opencv_cameras.json` or `transforms.json`;
//  - a COLMAP sparse model: a folder with sparse/0 (or sparse/) and images/, the model folder itself (cameras +
//    images .bin or .txt; images/ beside sparse/, or ReadOptions::images), or one of the model's files.
// Every error names the file and the frame or field.
std::vector<Scene> read_scenes(const std::string& path, const ReadOptions& options = {});

// The same, but an index whose entries fail to read still gives the scenes that did read; each failure is
// kept as (entry, one-line error). A single camera file that fails still throws.
struct SceneList {
  std::vector<Scene> scenes;
  std::vector<std::pair<std::string, std::string>> failed;
};
SceneList read_scene_list(const std::string& path, const ReadOptions& options = {});

// The scene called `name` among `scenes` (or the only one when `name` is empty).
const Scene& select_scene(const std::vector<Scene>& scenes, const std::string& name, const std::string& where);

}  // namespace lact
