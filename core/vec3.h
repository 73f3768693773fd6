// Small 3-vector helpers (double precision) for camera geometry: the one copy the core, the datasets and the
// viewer share.
#pragma once

#include <array>
#include <cmath>
#include <string>

#include "system/error.h"

namespace lact {

using Vec3 = std::array<double, 3>;

inline Vec3 add(const Vec3& a, const Vec3& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
inline Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
inline Vec3 mul(const Vec3& a, double s) { return {a[0] * s, a[1] * s, a[2] * s}; }
inline double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
inline double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }
inline Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
// `v` over its length; Error(degenerate) when the length is not above 1e-12 (zero, NaN).
inline Vec3 normalized(const Vec3& v, const std::string& degenerate) {
  const double n = norm(v);
  if (!(n > 1e-12)) throw Error(degenerate);
  return {v[0] / n, v[1] / n, v[2] / n};
}

}  // namespace lact
