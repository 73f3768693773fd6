// From a scene view on disk to what the model reads: decode, undistort, composite alpha onto the
// background, resize to cover the working size and crop the centre, with the intrinsics following.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/camera.h"
#include "datasets/scene.h"

namespace lact {

struct ViewLoadOptions {
  int height = 0, width = 0;                          // working size; 0 = the views' own (stated) size
  std::array<float, 3> background{1.0f, 1.0f, 1.0f};  // RGBA is composited onto this (white, as the official loader)
};

// The camera after resize-to-cover (s = max(W/W0, H/H0), size round(W0 s) x round(H0 s)) and a centre crop
// to height x width: fx*s, fy*s, cx*s - left, cy*s - top (per axis, from the rounded size).
struct CoverCrop {
  Camera camera;
  int resized_width = 0, resized_height = 0, left = 0, top = 0;
};
CoverCrop cover_crop(const Camera& camera, int height, int width);

// The sizes divisible by `patch` nearest height x width, for a message: "96x96 or 104x104".
std::string nearest_sizes_text(int height, int width, int patch);
// The working size for `indices` of `scene`: options' size, or the views' common stated size (an Error
// naming the scene file when they differ or are not divisible by `patch`).
std::pair<int, int> working_size(const Scene& scene, const std::vector<int>& indices, const ViewLoadOptions& options,
                                 int patch);

// One view at the working size. Resampling: Catmull-Rom (a sharp cubic close to PIL's LANCZOS) on
// [0, 1] values with alpha premultiplied; RGBA at the file's size is composited with PIL's integer
// arithmetic, so pixels equal the official loader's.
PosedImage load_view(const SceneView& view, int height, int width, const std::array<float, 3>& background);
// Only the camera of a view at the working size (targets).
Camera view_camera(const SceneView& view, int height, int width);

// The views `indices` of `scene` (images decoded when `with_images`).
std::vector<PosedImage> load_views(const Scene& scene, const std::vector<int>& indices, int height, int width,
                                   const std::array<float, 3>& background, bool with_images);

// "white", "black", "grey" or "R,G,B" in [0, 1].
std::array<float, 3> parse_background(const std::string& text, const std::string& flag = "--background");
// The text parse_background reads back to `rgb`: white, black, grey or R,G,B (each to float precision).
std::string background_text(const std::array<float, 3>& rgb);

}  // namespace lact
