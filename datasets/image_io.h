// Image files: decoding to the working size (resize-to-cover + centre crop, alpha composited onto a
// background) and writing PNG / NumPy .npy.
#pragma once

#include <array>
#include <string>

#include "core/camera.h"

namespace lact {

struct LoadOptions {
  int height = 0, width = 0;                     // working size; 0 = the file's size
  std::array<float, 3> background{1.0f, 1.0f, 1.0f};  // RGBA is composited onto this (white, as the official loader)
};

// The camera after resize-to-cover (scale s = max(W/W0, H/H0), size round(W0 s) x round(H0 s)) and a
// centre crop to height x width: fx*s, fy*s, cx*s - left, cy*s - top. `camera` is at its file's size.
struct CoverCrop {
  Camera camera;
  int resized_width, resized_height, left, top;
};
CoverCrop cover_crop(const Camera& camera, int height, int width);

// Loads `view_path`'s image for `camera` (intrinsics at the file's size) at the working size; returns the
// image and, in `camera`, the intrinsics updated for the resize and crop (fx*s, fy*s, cx*s - left, cy*s - top).
Image load_view_image(const std::string& path, Camera& camera, const LoadOptions& options);

void write_png(const std::string& path, const Image& image);
// float32 [H, W, 3] in standard NumPy .npy (format 1.0).
void write_npy(const std::string& path, const Image& image);

}  // namespace lact
