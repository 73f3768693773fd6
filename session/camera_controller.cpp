#include "session/camera_controller.h"

#include <algorithm>
#include <cmath>

namespace lact::session {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kMaxElevation = 89.0 * kPi / 180.0;

Vec3 unit(const Vec3& a, const Vec3& fallback) {
  const double n = norm(a);
  return n > 1e-12 && std::isfinite(n) ? mul(a, 1 / n) : fallback;
}

Vec3 column(const Camera& c, int k) { return {c.c2w[k], c.c2w[4 + k], c.c2w[8 + k]}; }
void set_column(Camera& c, int k, const Vec3& v) {
  for (int r = 0; r < 3; ++r) c.c2w[r * 4 + k] = v[r];
}
Vec3 centre(const Camera& c) { return column(c, 3); }
Vec3 forward(const Camera& c) { return column(c, 2); }

// Rodrigues: `v` rotated by `angle` about the unit `axis`.
Vec3 rotate_vector(const Vec3& v, const Vec3& axis, double angle) {
  const double c = std::cos(angle), s = std::sin(angle);
  return add(add(mul(v, c), mul(cross(axis, v), s)), mul(axis, dot(axis, v) * (1 - c)));
}

// Keeps the rotation orthonormal after many small rotations (Gram-Schmidt from the forward axis).
void orthonormalize(Camera& c) {
  const Vec3 z = unit(forward(c), {0, 0, 1});
  Vec3 y = column(c, 1);
  y = unit(sub(y, mul(z, dot(y, z))), {0, 1, 0});
  const Vec3 x = cross(y, z);
  set_column(c, 0, x);
  set_column(c, 1, y);
  set_column(c, 2, z);
}

// Elevation of `v` above the plane normal to `up` (radians).
double elevation(const Vec3& v, const Vec3& up) { return std::asin(std::clamp(dot(unit(v, up), up), -1.0, 1.0)); }

// The pitch step that keeps the elevation within +-89 degrees (a camera already beyond it may only return).
double clamp_pitch(double current, double pitch) {
  const double lo = std::min(current, -kMaxElevation), hi = std::max(current, kMaxElevation);
  return std::clamp(current + pitch, lo, hi) - current;
}

}  // namespace

SceneFrame scene_frame(const std::vector<Camera>& cameras) {
  SceneFrame f;
  if (cameras.empty()) return f;
  Vec3 up{0, 0, 0};
  for (const Camera& c : cameras) up = sub(up, column(c, 1));
  f.up = unit(up, unit(mul(column(cameras[0], 1), -1), {0, 0, 1}));
  // Captures at varying elevations tilt the mean slightly: within about 18 degrees of a world axis, take the axis
  // (z-up object renders, y-up scenes orbit exactly about their up axis).
  for (int k = 0; k < 3; ++k)
    if (std::abs(f.up[k]) > 0.95) {
      const double sign = f.up[k] > 0 ? 1 : -1;
      f.up = {0, 0, 0};
      f.up[k] = sign;
      break;
    }
  if (cameras.size() >= 2) {
    f.pivot = look_at_point(cameras);
  } else {
    f.pivot = add(centre(cameras[0]), forward(cameras[0]));
  }
  std::vector<double> distances;
  for (const Camera& c : cameras) distances.push_back(norm(sub(centre(c), f.pivot)));
  std::nth_element(distances.begin(), distances.begin() + distances.size() / 2, distances.end());
  const double median = distances[distances.size() / 2];
  f.scale = std::isfinite(median) && median > 1e-9 ? median : 1.0;
  return f;
}

CameraController::CameraController(const SceneFrame& frame, const Camera& start, int start_view)
    : frame_(frame), start_(start), start_view_(start_view) {
  speed = frame_.scale;
  snap(start, start_view);
}

void CameraController::snap(const Camera& camera, int view) {
  camera_ = camera;
  snapped_view_ = view;
  place_target();
}

void CameraController::reset() { snap(start_, start_view_); }

void CameraController::place_target() {
  const Vec3 p = centre(camera_), f = unit(forward(camera_), {0, 0, 1});
  double d = dot(sub(frame_.pivot, p), f);
  if (!std::isfinite(d) || d < 1e-3 * frame_.scale) d = frame_.scale;
  distance_ = d;
  target_ = add(p, mul(f, d));
}

void CameraController::rotate(const Vec3& pivot, const Vec3& axis, double angle) {
  if (angle == 0) return;
  for (int k = 0; k < 3; ++k) set_column(camera_, k, rotate_vector(column(camera_, k), axis, angle));
  set_column(camera_, 3, add(pivot, rotate_vector(sub(centre(camera_), pivot), axis, angle)));
  target_ = add(pivot, rotate_vector(sub(target_, pivot), axis, angle));
  orthonormalize(camera_);
}

void CameraController::orbit(double yaw, double pitch) {
  if (yaw == 0 && pitch == 0) return;
  moved();
  rotate(target_, frame_.up, yaw);
  const Vec3 offset = sub(centre(camera_), target_);
  const Vec3 axis = cross(offset, frame_.up);
  if (norm(axis) > 1e-12 * (1 + norm(offset)))
    rotate(target_, unit(axis, {1, 0, 0}), clamp_pitch(elevation(offset, frame_.up), pitch));
  // The target stays on the optical axis at the same distance (both rotate rigidly about it).
}

void CameraController::look(double yaw, double pitch) {
  if (yaw == 0 && pitch == 0) return;
  moved();
  const Vec3 p = centre(camera_);
  rotate(p, frame_.up, yaw);
  const Vec3 f = forward(camera_);
  const Vec3 axis = cross(f, frame_.up);
  if (norm(axis) > 1e-12) rotate(p, unit(axis, {1, 0, 0}), clamp_pitch(elevation(f, frame_.up), pitch));
  target_ = add(p, mul(forward(camera_), distance_));
}

void CameraController::pan(double dx, double dy) {
  if (dx == 0 && dy == 0) return;
  moved();
  const Vec3 shift =
      add(mul(column(camera_, 0), -dx * distance_ / camera_.fx), mul(column(camera_, 1), -dy * distance_ / camera_.fy));
  set_column(camera_, 3, add(centre(camera_), shift));
  target_ = add(target_, shift);
}

void CameraController::dolly(double steps) {
  if (steps == 0) return;
  moved();
  distance_ = std::max(distance_ * std::pow(0.85, steps), 1e-4 * frame_.scale);
  set_column(camera_, 3, sub(target_, mul(forward(camera_), distance_)));
}

void CameraController::move(const Vec3& direction, double seconds) {
  if (direction[0] == 0 && direction[1] == 0 && direction[2] == 0) return;
  moved();
  const double step = speed * seconds;
  const Vec3 shift = add(add(mul(column(camera_, 0), direction[0] * step), mul(frame_.up, direction[1] * step)),
                         mul(forward(camera_), direction[2] * step));
  set_column(camera_, 3, add(centre(camera_), shift));
  target_ = add(target_, shift);
}

double CameraController::hfov() const { return 2 * std::atan(camera_.width / (2.0 * camera_.fx)) * 180 / kPi; }

void CameraController::set_hfov(double degrees) {
  degrees = std::clamp(degrees, 1.0, 170.0);
  const double fx = camera_.width / (2 * std::tan(degrees * kPi / 360));
  if (std::abs(fx - camera_.fx) < 1e-6 * fx) return;
  moved();
  const double ratio = fx / camera_.fx;
  camera_.fx = static_cast<float>(fx);
  camera_.fy = static_cast<float>(camera_.fy * ratio);
}

Camera scaled_camera(const Camera& camera, double scale, int multiple) {
  if (scale == 1.0) return camera;
  auto side = [&](int size) {
    const int n = static_cast<int>(std::lround(size * scale / multiple));
    return std::max(1, n) * multiple;
  };
  Camera c = camera;
  c.width = side(camera.width);
  c.height = side(camera.height);
  const double sx = static_cast<double>(c.width) / camera.width, sy = static_cast<double>(c.height) / camera.height;
  c.fx = static_cast<float>(camera.fx * sx);
  c.cx = static_cast<float>(camera.cx * sx);
  c.fy = static_cast<float>(camera.fy * sy);
  c.cy = static_cast<float>(camera.cy * sy);
  return c;
}

bool same_camera(const Camera& a, const Camera& b) {
  return a.width == b.width && a.height == b.height && a.fx == b.fx && a.fy == b.fy && a.cx == b.cx && a.cy == b.cy &&
         a.c2w == b.c2w;
}

}  // namespace lact::session
