#include "core/camera.h"

#include <cmath>

#include "core/error.h"

namespace lact {

void Camera::validate(const std::string& where) const {
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
