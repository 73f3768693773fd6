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

// What a camera may state, bounded by what float32 rays carry (kernels/ray_tokens.h: origins become floats, the
// pixel offsets u + 0.5 - cx are float arithmetic divided by fx in float; the input linear sums the 12 p^2 ray
// channels times its weights in float, and the input layer norm sums squares in float on the GPU):
//  - camera position, each component |t| <= 1e15: 384 of a patch-8 token's 768 channels scale with t (o, o x d),
//    so with trained input weights (|w| ~ 1/sqrt(768)) a linear output is at most ~1.4e16 and the layer norm's
//    sum of squares over 4096 channels ~8e35, under float's 3.4e38 with a margin of 400; at 1e17 it overflows;
//  - focal lengths in [1e-3, 1e8] pixels: below 1e-3 (fx 1e-40 is a float denormal: u / fx overflows) the field
//    of view of even a 2-pixel image is 179.9 degrees; above 1e8 a 65536-pixel image spans under 0.04 degrees;
//  - principal point |cx|, |cy| <= 2^20 pixels: float spacing there is 1/8 pixel, so u + 0.5 - cx still tells
//    pixel centres apart (at 2^24 it would not tell whole pixels apart);
//  - rotation orthonormal with determinant +1, each entry of R^T R - I within kRotationTolerance (float32 poses
//    in files are orthonormal to ~1e-7, poses rounded to 3 decimals to at most 2 sqrt(3) 5e-4 = 1.7e-3): a scaled
//    (by over 0.125%), sheared or mirrored matrix is no camera; the last row is [0 0 0 1] within the same tolerance.
constexpr double kMaxCameraPosition = 1e15;
constexpr double kMinFocalPixels = 1e-3;
constexpr double kMaxFocalPixels = 1e8;
constexpr double kMaxPrincipalPoint = 1 << 20;
constexpr double kRotationTolerance = 2.5e-3;

// "HxW" (or "HXW") with both sides in [1, kMaxImageSide]; false for anything else (no overflow, no junk).
bool parse_image_size(const std::string& text, int& height, int& width);

// Throws Error(where, ...) unless `pose` (row-major 4x4, `what` names it: "field 'w2c'", "camera pose") is a
// rigid motion within the bounds above: finite, last row [0 0 0 1], rotation orthonormal with determinant +1,
// translation within kMaxCameraPosition. The same test holds for a world-to-camera matrix and its inverse.
void check_rigid_pose(const std::array<double, 16>& pose, const std::string& where, const std::string& what);

// The inverse of a pose check_rigid_pose accepted: the 3x3 part inverted exactly (it may be off orthonormal by
// kRotationTolerance) and the translation -R^-1 t, at any scale (a 4x4 elimination with a pivot threshold
// relative to the largest entry would call a rotation with a 1e15 translation singular).
std::array<double, 16> invert_rigid_pose(const std::array<double, 16>& pose);

struct Camera {
  int width = 0, height = 0;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  std::array<double, 16> c2w{};  // row-major 4x4

  // Throws Error(where, ...) for a size outside [1, kMaxImageSide], intrinsics outside the bounds above (or not
  // finite) or a pose check_rigid_pose refuses.
  void validate(const std::string& where) const;
};

// Sets fx, fy, cx, cy from the values a file states, after checking them in double against the bounds above (a
// double beyond float's range must not reach a float conversion). Throws Error(where, ...) naming the value.
void set_intrinsics(Camera& camera, double fx, double fy, double cx, double cy, const std::string& where);

// An RGB image, height x width x 3, values in [0, 1].
struct Image {
  int width = 0, height = 0;
  std::vector<float> rgb;
};

// Throws Error(where, ...) when a rendered image holds NaN or infinity (weights or a state that overflow float:
// such an image would be written black with a PSNR of null).
void check_rendered_image(const Image& image, const std::string& where);

// A view the model reads: a camera and, for inputs, its image (already at the working size).
struct PosedImage {
  Camera camera;
  Image image;
};

}  // namespace lact
