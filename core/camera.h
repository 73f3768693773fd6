// A pinhole camera in the one convention the engine uses: OpenCV axes (x right, y down, z forward),
// camera-to-world, intrinsics in pixels at the working resolution.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lact {

// The largest image side any reader, flag or file may state; images decode only up to kMaxImagePixels.
constexpr int kMaxImageSide = 1 << 16;
constexpr int64_t kMaxImagePixels = int64_t{1} << 26;  // 64 Mpixel (8192 x 8192): 256 MiB as RGBA8

// "HxW" (or "HXW") with both sides in [1, kMaxImageSide]; false for anything else (no overflow, no junk).
bool parse_image_size(const std::string& text, int& height, int& width);

struct Camera {
  int width = 0, height = 0;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  std::array<double, 16> c2w{};  // row-major 4x4

  // Throws Error(where, ...) for a size outside [1, kMaxImageSide], non-finite values, non-positive focal
  // lengths or a singular rotation.
  void validate(const std::string& where) const;
};

// An RGB image, height x width x 3, values in [0, 1].
struct Image {
  int width = 0, height = 0;
  std::vector<float> rgb;
};

// A view the model reads: a camera and, for inputs, its image (already at the working size).
struct PosedImage {
  Camera camera;
  Image image;
};

}  // namespace lact
