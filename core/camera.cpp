#include "core/camera.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "system/error.h"

namespace lact {

namespace {

// A number as a message shows it: "1e+39", "0.5".
std::string shown(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", v);
  return text;
}

void check_intrinsics(double fx, double fy, double cx, double cy, const std::string& where) {
  const double values[4] = {fx, fy, cx, cy};
  const char* names[4] = {"fx", "fy", "cx", "cy"};
  for (int i = 0; i < 4; ++i)
    if (!std::isfinite(values[i]))
      throw Error(where, std::string("camera intrinsic ") + names[i] + " is NaN or infinity");
  for (int i = 0; i < 2; ++i)
    if (!(values[i] >= kMinFocalPixels && values[i] <= kMaxFocalPixels))
      throw Error(where, std::string("focal length ") + names[i] + " " + shown(values[i]) + " is outside [" +
                             shown(kMinFocalPixels) + ", " + shown(kMaxFocalPixels) +
                             "] pixels (what float32 rays carry)");
  for (int i = 2; i < 4; ++i)
    if (std::abs(values[i]) > kMaxPrincipalPoint)
      throw Error(where, std::string("principal point ") + names[i] + " " + shown(values[i]) + " is beyond +-" +
                             shown(kMaxPrincipalPoint) + " pixels (what float32 rays carry)");
}

// The largest entry of |R^T R - I| for the upper-left 3x3 of a row-major 4x4.
double orthonormality_error(const std::array<double, 16>& m) {
  double worst = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double dot = 0;
      for (int k = 0; k < 3; ++k) dot += m[k * 4 + i] * m[k * 4 + j];
      worst = std::max(worst, std::abs(dot - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

}  // namespace

bool parse_image_size(const std::string& text, int& height, int& width) {
  const size_t x = text.find_first_of("xX");
  if (x == std::string::npos) return false;
  auto side = [](const std::string& digits, int& value) {
    if (digits.empty() || digits.size() > 6) return false;
    value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    return value >= 1 && value <= kMaxImageSide;
  };
  int h = 0, w = 0;
  if (!side(text.substr(0, x), h) || !side(text.substr(x + 1), w)) return false;
  height = h, width = w;
  return true;
}

// R^T R this close to I (poses rounded to 2 decimals: ~1e-2) is more likely rounding than a scale or shear.
constexpr double kRoundedRotation = 0.03;

void check_rigid_pose(const std::array<double, 16>& m, const std::string& where, const std::string& what) {
  for (double v : m)
    if (!std::isfinite(v)) throw Error(where, what + " holds NaN or infinity");
  const double last[4] = {0, 0, 0, 1};
  for (int c = 0; c < 4; ++c)
    if (std::abs(m[12 + c] - last[c]) > kRotationTolerance)
      throw Error(where, what + " has last row [" + shown(m[12]) + " " + shown(m[13]) + " " + shown(m[14]) + " " +
                             shown(m[15]) + "], not [0 0 0 1]: not a rigid camera pose");
  const double det =
      m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) + m[2] * (m[4] * m[9] - m[5] * m[8]);
  const double error = orthonormality_error(m);
  if (error <= kRotationTolerance && det < 0)
    throw Error(where, what + " rotation is mirrored (determinant " + shown(det) + "): not a camera rotation");
  if (error > kRotationTolerance)
    throw Error(where, what + " rotation is scaled, sheared or singular (R^T R differs from I by " + shown(error) +
                           ", determinant " + shown(det) + "): not a camera rotation" +
                           (error < kRoundedRotation ? " (written with too few decimals? write at least 4)" : ""));
  for (int r = 0; r < 3; ++r)
    if (std::abs(m[r * 4 + 3]) > kMaxCameraPosition)
      throw Error(where, what + " translation " + shown(m[r * 4 + 3]) + " is beyond +-" + shown(kMaxCameraPosition) +
                             " (more than float32 rays carry)");
}

std::array<double, 16> invert_rigid_pose(const std::array<double, 16>& m) {
  const double det =
      m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) + m[2] * (m[4] * m[9] - m[5] * m[8]);
  double r[9];  // the inverse of the 3x3 part: its adjugate over the determinant
  r[0] = (m[5] * m[10] - m[6] * m[9]) / det, r[1] = (m[2] * m[9] - m[1] * m[10]) / det;
  r[2] = (m[1] * m[6] - m[2] * m[5]) / det, r[3] = (m[6] * m[8] - m[4] * m[10]) / det;
  r[4] = (m[0] * m[10] - m[2] * m[8]) / det, r[5] = (m[2] * m[4] - m[0] * m[6]) / det;
  r[6] = (m[4] * m[9] - m[5] * m[8]) / det, r[7] = (m[1] * m[8] - m[0] * m[9]) / det;
  r[8] = (m[0] * m[5] - m[1] * m[4]) / det;
  std::array<double, 16> inverse{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) inverse[i * 4 + j] = r[i * 3 + j];
    inverse[i * 4 + 3] = -(r[i * 3] * m[3] + r[i * 3 + 1] * m[7] + r[i * 3 + 2] * m[11]);
  }
  inverse[15] = 1;
  return inverse;
}

void Camera::validate(const std::string& where) const {
  if (width < 1 || height < 1 || width > kMaxImageSide || height > kMaxImageSide)
    throw Error(where, "camera size " + std::to_string(height) + "x" + std::to_string(width) + " is outside 1.." +
                           std::to_string(kMaxImageSide));
  check_intrinsics(fx, fy, cx, cy, where);
  check_rigid_pose(c2w, where, "camera pose");
}

void set_intrinsics(Camera& camera, double fx, double fy, double cx, double cy, const std::string& where) {
  check_intrinsics(fx, fy, cx, cy, where);
  camera.fx = static_cast<float>(fx), camera.fy = static_cast<float>(fy);
  camera.cx = static_cast<float>(cx), camera.cy = static_cast<float>(cy);
}

void check_rendered_image(const Image& image, const std::string& where) {
  size_t bad = 0;
  for (float v : image.rgb) bad += !std::isfinite(v);
  if (bad)
    throw Error(where, "the rendered image holds NaN or infinity in " + std::to_string(bad) + " of " +
                           std::to_string(image.rgb.size()) +
                           " values (the model's weights or the scene state overflow float32): not written");
}

}  // namespace lact
