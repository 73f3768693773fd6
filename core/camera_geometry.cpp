#include "core/camera_geometry.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "system/error.h"

namespace lact {

namespace {
constexpr double kPi = 3.14159265358979323846;
double radians(double degrees) { return degrees * kPi / 180.0; }
Vec3 unit_direction(const Vec3& v) { return normalized(v, "camera path: degenerate direction"); }
// numpy.linspace(a, b, n) (endpoint included).
double linspace(double a, double b, int n, int i) { return n == 1 ? a : a + (b - a) * i / (n - 1); }
}  // namespace

std::array<double, 16> look_at(const Vec3& position, const Vec3& target, const Vec3& up) {
  const Vec3 forward = unit_direction({target[0] - position[0], target[1] - position[1], target[2] - position[2]});
  const Vec3 right = unit_direction(cross(forward, up));
  const Vec3 true_up = unit_direction(cross(right, forward));
  return {right[0], -true_up[0], forward[0], position[0], right[1], -true_up[1], forward[1], position[1],
          right[2], -true_up[2], forward[2], position[2], 0,        0,           0,          1};
}

Camera pinhole(int width, int height, double hfov_degrees) {
  Camera c;
  c.width = width, c.height = height;
  c.fx = c.fy = static_cast<float>(width / (2.0 * std::tan(radians(hfov_degrees) / 2.0)));
  c.cx = width / 2.0f, c.cy = height / 2.0f;
  return c;
}

std::vector<Camera> turntable_path(int frames, int width, int height, double hfov, double min_radius, double max_radius,
                                   double elevation) {
  std::vector<Camera> path;
  for (int i = 0; i < frames; ++i) {
    const double azimuth = radians(360.0 * i / frames);
    const double phase = linspace(0, 2 * kPi, frames, i);
    const double elev = radians(elevation + 15.0 * std::sin(phase));
    const double radius = (min_radius + max_radius) / 2 + (max_radius - min_radius) / 2 * std::sin(phase);
    const Vec3 position{radius * std::cos(elev) * std::cos(azimuth), radius * std::cos(elev) * std::sin(azimuth),
                        radius * std::sin(elev)};
    Camera c = pinhole(width, height, hfov);
    c.c2w = look_at(position, {0, 0, 0}, {0, 0, 1});
    path.push_back(c);
  }
  return path;
}

namespace {
// Two unit axes spanning the plane normal to the unit vector `up` (azimuth 0 along the first, 90 the second).
std::pair<Vec3, Vec3> plane_axes(const Vec3& up) {
  const Vec3 helper = std::abs(up[0]) < 0.9 ? Vec3{1, 0, 0} : Vec3{0, 1, 0};
  const Vec3 a = unit_direction(cross(up, helper));
  return {a, cross(up, a)};
}
}  // namespace

std::vector<Camera> orbit_path(int frames, const Camera& intrinsics, const Vec3& target, const Vec3& up_in,
                               double radius, double elevation, double start_azimuth) {
  const Vec3 up = unit_direction(up_in);
  const auto [a, b] = plane_axes(up);
  std::vector<Camera> path;
  for (int i = 0; i < frames; ++i) {
    const double azimuth = radians(start_azimuth + 360.0 * i / frames), elev = radians(elevation);
    Vec3 position;
    for (int k = 0; k < 3; ++k)
      position[k] = target[k] + radius * (std::cos(elev) * (std::cos(azimuth) * a[k] + std::sin(azimuth) * b[k]) +
                                          std::sin(elev) * up[k]);
    Camera c = intrinsics;
    c.c2w = look_at(position, target, up);
    path.push_back(c);
  }
  return path;
}

std::array<double, 4> rotation_to_quaternion(const std::array<double, 16>& m) {
  const double r00 = m[0], r01 = m[1], r02 = m[2], r10 = m[4], r11 = m[5], r12 = m[6], r20 = m[8], r21 = m[9],
               r22 = m[10];
  const double trace = r00 + r11 + r22;
  std::array<double, 4> q;
  if (trace > 0) {
    const double s = 2 * std::sqrt(trace + 1);
    q = {0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s};
  } else if (r00 > r11 && r00 > r22) {
    const double s = 2 * std::sqrt(1 + r00 - r11 - r22);
    q = {(r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s};
  } else if (r11 > r22) {
    const double s = 2 * std::sqrt(1 + r11 - r00 - r22);
    q = {(r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s};
  } else {
    const double s = 2 * std::sqrt(1 + r22 - r00 - r11);
    q = {(r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s};
  }
  const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (double& v : q) v /= n;
  return q;
}

void quaternion_to_rotation(const std::array<double, 4>& q, std::array<double, 16>& m) {
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  m[0] = 1 - 2 * (y * y + z * z), m[1] = 2 * (x * y - z * w), m[2] = 2 * (x * z + y * w);
  m[4] = 2 * (x * y + z * w), m[5] = 1 - 2 * (x * x + z * z), m[6] = 2 * (y * z - x * w);
  m[8] = 2 * (x * z - y * w), m[9] = 2 * (y * z + x * w), m[10] = 1 - 2 * (x * x + y * y);
}

std::array<double, 4> slerp(std::array<double, 4> a, const std::array<double, 4>& b, double t) {
  double dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
  if (dot < 0) {  // the shorter arc
    for (double& v : a) v = -v;
    dot = -dot;
  }
  std::array<double, 4> q;
  if (dot > 0.9995) {  // nearly equal: linear, then renormalise
    for (int i = 0; i < 4; ++i) q[i] = a[i] + t * (b[i] - a[i]);
  } else {
    const double theta = std::acos(dot), s = std::sin(theta);
    const double wa = std::sin((1 - t) * theta) / s, wb = std::sin(t * theta) / s;
    for (int i = 0; i < 4; ++i) q[i] = wa * a[i] + wb * b[i];
  }
  const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (double& v : q) v /= n;
  return q;
}

namespace {

// The camera a fraction t of the way from a to b: position and intrinsics linear, rotation by slerp.
Camera interpolate_camera(const Camera& a, const Camera& b, double t) {
  const auto qa = rotation_to_quaternion(a.c2w), qb = rotation_to_quaternion(b.c2w);
  Camera c = a;
  auto mix = [t](double x, double y) { return x + t * (y - x); };
  c.fx = static_cast<float>(mix(a.fx, b.fx)), c.fy = static_cast<float>(mix(a.fy, b.fy));
  c.cx = static_cast<float>(mix(a.cx, b.cx)), c.cy = static_cast<float>(mix(a.cy, b.cy));
  quaternion_to_rotation(slerp(qa, qb, t), c.c2w);
  for (int r = 0; r < 3; ++r) c.c2w[r * 4 + 3] = mix(a.c2w[r * 4 + 3], b.c2w[r * 4 + 3]);
  c.c2w[12] = c.c2w[13] = c.c2w[14] = 0, c.c2w[15] = 1;
  return c;
}

}  // namespace

std::vector<Camera> interpolate_path(const std::vector<Camera>& keys, int frames_per_segment) {
  if (keys.size() < 2) throw Error("camera path: interpolation needs at least two cameras");
  if (frames_per_segment < 1) throw Error("camera path: frames per segment must be positive");
  std::vector<Camera> path;
  for (size_t k = 0; k + 1 < keys.size(); ++k) {
    const bool last = k + 2 == keys.size();
    const int count = frames_per_segment + (last ? 1 : 0);  // include the final key once
    for (int i = 0; i < count; ++i)
      path.push_back(interpolate_camera(keys[k], keys[k + 1], static_cast<double>(i) / frames_per_segment));
  }
  return path;
}

namespace {

// Uniform Catmull-Rom between b (t = 0) and c (t = 1), a and d their outer neighbours.
double catmull_rom(double a, double b, double c, double d, double t) {
  return 0.5 * (2 * b + (c - a) * t + (2 * a - 5 * b + 4 * c - d) * t * t + (3 * b - a - 3 * c + d) * t * t * t);
}

// `q` or -q, whichever is nearer `reference` (the same rotation).
std::array<double, 4> aligned(std::array<double, 4> q, const std::array<double, 4>& reference) {
  if (q[0] * reference[0] + q[1] * reference[1] + q[2] * reference[2] + q[3] * reference[3] < 0)
    for (double& v : q) v = -v;
  return q;
}

// The linear camera `c` (between keys k and k+1, a fraction t) moved `s` of the way to the spline's.
Camera smoothed(Camera c, const std::vector<Camera>& keys, size_t k, double t, double s) {
  const size_t a = k == 0 ? 0 : k - 1, d = std::min(k + 2, keys.size() - 1);
  for (int r = 0; r < 3; ++r) {
    const auto p = [&](size_t i) { return keys[i].c2w[r * 4 + 3]; };
    const double spline = catmull_rom(p(a), p(k), p(k + 1), p(d), t);
    c.c2w[r * 4 + 3] += s * (spline - c.c2w[r * 4 + 3]);
  }
  const auto qb = rotation_to_quaternion(keys[k].c2w);
  const auto qa = aligned(rotation_to_quaternion(keys[a].c2w), qb);
  const auto qc = aligned(rotation_to_quaternion(keys[k + 1].c2w), qb);
  const auto qd = aligned(rotation_to_quaternion(keys[d].c2w), qc);
  const auto linear = aligned(rotation_to_quaternion(c.c2w), qb);
  std::array<double, 4> q;
  double n = 0;
  for (int i = 0; i < 4; ++i) {
    q[i] = linear[i] + s * (catmull_rom(qa[i], qb[i], qc[i], qd[i], t) - linear[i]);
    n += q[i] * q[i];
  }
  for (double& v : q) v /= std::sqrt(n);
  quaternion_to_rotation(q, c.c2w);
  return c;
}

}  // namespace

std::vector<Camera> interpolate_path_frames(const std::vector<Camera>& keys, int frames, double smoothness) {
  if (keys.size() < 2) throw Error("camera path: interpolation needs at least two cameras");
  if (frames < 1) throw Error("camera path: the number of frames must be positive");
  if (!(smoothness >= 0 && smoothness <= 1)) throw Error("camera path: smoothness must be in [0, 1]");
  const double last_key = static_cast<double>(keys.size() - 1);
  std::vector<Camera> path;
  for (int i = 0; i < frames; ++i) {
    const double s = frames == 1 ? 0.0 : last_key * i / (frames - 1);  // where along the keys: 0 .. K-1
    const size_t k = std::min(static_cast<size_t>(s), keys.size() - 2);
    const double t = s - static_cast<double>(k);
    path.push_back(interpolate_camera(keys[k], keys[k + 1], t));
    if (smoothness > 0) path.back() = smoothed(path.back(), keys, k, t, smoothness);
  }
  return path;
}

int nearest_camera(const std::vector<Camera>& candidates, const Camera& target) {
  int best = -1;
  double best_cos = -2, best_dist = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Camera& c = candidates[i];
    double cosine = 0, dist = 0;
    for (int r = 0; r < 3; ++r) {
      cosine += c.c2w[r * 4 + 2] * target.c2w[r * 4 + 2];
      const double d = c.c2w[r * 4 + 3] - target.c2w[r * 4 + 3];
      dist += d * d;
    }
    if (best < 0 || cosine > best_cos + 1e-6 || (cosine > best_cos - 1e-6 && dist < best_dist))
      best = static_cast<int>(i), best_cos = cosine, best_dist = dist;
  }
  return best;
}

Vec3 look_at_point(const std::vector<Camera>& cameras) {
  // Minimise sum_i |(I - d_i d_i^T)(p - o_i)|^2: solve (sum_i (I - d d^T)) p = sum_i (I - d d^T) o_i.
  double a[3][3] = {}, rhs[3] = {};
  for (const Camera& c : cameras) {
    const double d[3] = {c.c2w[2], c.c2w[6], c.c2w[10]}, o[3] = {c.c2w[3], c.c2w[7], c.c2w[11]};
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) {
        const double m = (r == k ? 1.0 : 0.0) - d[r] * d[k];
        a[r][k] += m;
        rhs[r] += m * o[k];
      }
  }
  const double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                     a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                     a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  if (std::abs(det) < 1e-9) {  // parallel axes: fall back to the mean centre
    Vec3 mean{};
    for (const Camera& c : cameras)
      for (int r = 0; r < 3; ++r) mean[r] += c.c2w[r * 4 + 3] / cameras.size();
    return mean;
  }
  Vec3 p;
  for (int col = 0; col < 3; ++col) {  // Cramer's rule
    double m[3][3];
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) m[r][k] = k == col ? rhs[r] : a[r][k];
    p[col] = (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
              m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])) /
             det;
  }
  return p;
}

std::vector<Camera> orbit_around(const std::vector<Camera>& cameras, int frames, double radius, double elevation) {
  if (cameras.empty()) throw Error("orbit", "needs at least one camera to orbit around");
  const Vec3 target = look_at_point(cameras);
  double mean_radius = 0, up[3] = {0, 0, 0};
  for (const Camera& c : cameras) {
    const double dx = c.c2w[3] - target[0], dy = c.c2w[7] - target[1], dz = c.c2w[11] - target[2];
    mean_radius += std::sqrt(dx * dx + dy * dy + dz * dz) / cameras.size();
    for (int r = 0; r < 3; ++r) up[r] -= c.c2w[r * 4 + 1];  // OpenCV y is down: mean "up" = -mean y
  }
  // Starting beside the first camera (its azimuth about the target), on the side the capture saw: the plane's own
  // axes put the first frame anywhere, behind a handheld scene as often as not.
  const Vec3 unit_up = unit_direction({up[0], up[1], up[2]});
  const auto [a, b] = plane_axes(unit_up);
  const Vec3 from_target{cameras[0].c2w[3] - target[0], cameras[0].c2w[7] - target[1], cameras[0].c2w[11] - target[2]};
  const double along_a = dot(from_target, a), along_b = dot(from_target, b);
  const double start = std::hypot(along_a, along_b) > 1e-12 ? std::atan2(along_b, along_a) * 180.0 / kPi : 0.0;
  return orbit_path(frames, cameras[0], target, unit_up, radius > 0 ? radius : mean_radius, elevation, start);
}

}  // namespace lact
