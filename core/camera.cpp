#include "core/camera.h"

#include <cmath>

#include "core/error.h"

namespace lact {

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

void Camera::validate(const std::string& where) const {
  if (width < 1 || height < 1 || width > kMaxImageSide || height > kMaxImageSide)
    throw Error(where, "camera size " + std::to_string(width) + "x" + std::to_string(height) + " is outside 1.." +
                           std::to_string(kMaxImageSide));
  const float intrinsics[4] = {fx, fy, cx, cy};
  for (float v : intrinsics)
    if (!std::isfinite(v)) throw Error(where, "camera intrinsics contain NaN or infinity");
  if (fx <= 0 || fy <= 0) throw Error(where, "camera focal lengths must be positive");
  for (double v : c2w)
    if (!std::isfinite(v)) throw Error(where, "camera pose contains NaN or infinity");
  const auto& m = c2w;
  const double det = m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) +
                     m[2] * (m[4] * m[9] - m[5] * m[8]);
  if (std::abs(det) < 1e-8) throw Error(where, "camera rotation is singular");
}

}  // namespace lact
