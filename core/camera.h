// A pinhole camera in the one convention the engine uses: OpenCV axes (x right, y down, z forward),
// camera-to-world, intrinsics in pixels at the working resolution.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace lact {

struct Camera {
  int width = 0, height = 0;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  std::array<double, 16> c2w{};  // row-major 4x4

  // Throws Error(where, ...) for non-finite values, non-positive focal lengths or a singular rotation.
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
