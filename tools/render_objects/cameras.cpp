#include "cameras.h"

#include <cmath>
#include <stdexcept>

#include "rng.h"

namespace ro {

namespace {

void cross3(const double a[3], const double b[3], double out[3]) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

bool normalize3(double v[3]) {
  const double l = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (!(l > 1e-12)) return false;
  for (int i = 0; i < 3; ++i) v[i] /= l;
  return true;
}

}  // namespace

ViewSpec parse_view_spec(const std::string& text) {
  ViewSpec spec;
  if (text == "fixed64") {
    spec.kind = ViewSpec::Kind::Fixed64;
    spec.count = 64;
    return spec;
  }
  const std::string prefix = "random:";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    const std::string n = text.substr(prefix.size());
    size_t used = 0;
    int count = 0;
    try {
      count = std::stoi(n, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == n.size() && !n.empty() && count > 0 && count <= 100000) {
      spec.kind = ViewSpec::Kind::Random;
      spec.count = count;
      return spec;
    }
  }
  throw std::invalid_argument("--views must be 'fixed64' or 'random:N' with N >= 1, got '" + text + "'");
}

Camera look_at(const double eye[3], const double target[3], const double up[3], int width, int height,
               double fov_x_deg) {
  double forward[3] = {target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]};
  if (!normalize3(forward)) throw std::invalid_argument("look_at: eye and target coincide");
  double right[3];
  cross3(forward, up, right);
  if (!normalize3(right)) {
    // Looking straight along `up`: any right vector perpendicular to forward will do; pick one from +x / +y.
    const double alt[3] = {std::fabs(forward[0]) < 0.9 ? 1.0 : 0.0, std::fabs(forward[0]) < 0.9 ? 0.0 : 1.0, 0.0};
    cross3(forward, alt, right);
    normalize3(right);
  }
  double down[3];
  cross3(forward, right, down);  // z x x = y for a right-handed camera frame
  // c2w has columns [right, down, forward, eye]; w2c is its rigid inverse: rows right, down, forward.
  Camera cam;
  cam.width = width, cam.height = height;
  cam.fx = cam.fy = 0.5 * width / std::tan(0.5 * fov_x_deg * kPi / 180.0);
  cam.cx = 0.5 * width, cam.cy = 0.5 * height;
  const double* rows[3] = {right, down, forward};
  for (int r = 0; r < 3; ++r) {
    // (+ 0.0 turns -0.0 into 0.0 in the written JSON.)
    for (int c = 0; c < 3; ++c) cam.w2c.m[r][c] = rows[r][c] + 0.0;
    cam.w2c.m[r][3] = -(rows[r][0] * eye[0] + rows[r][1] * eye[1] + rows[r][2] * eye[2]) + 0.0;
  }
  return cam;
}

Camera orbit_camera(double azimuth_deg, double elevation_deg, double radius, int width, int height, double fov_x_deg) {
  const double az = azimuth_deg * kPi / 180.0, el = elevation_deg * kPi / 180.0;
  const double eye[3] = {radius * std::cos(el) * std::cos(az), radius * std::cos(el) * std::sin(az),
                         radius * std::sin(el)};
  const double target[3] = {0, 0, 0};
  const double up[3] = {0, 0, 1};
  return look_at(eye, target, up, width, height, fov_x_deg);
}

std::vector<Camera> make_views(const ViewSpec& spec, int width, int height, uint64_t seed) {
  std::vector<Camera> cams;
  if (spec.kind == ViewSpec::Kind::Fixed64) {
    for (int e = 0; e < 4; ++e)
      for (int a = 0; a < 16; ++a)
        cams.push_back(orbit_camera(22.5 * a, 20.0 * e, spec.radius, width, height, spec.fov_x_deg));
    return cams;
  }
  Rng rng(seed);
  const double s0 = std::sin(spec.elev_min_deg * kPi / 180.0), s1 = std::sin(spec.elev_max_deg * kPi / 180.0);
  for (int i = 0; i < spec.count; ++i) {
    const double az = rng.uniform(0.0, 360.0);
    const double el = std::asin(rng.uniform(s0, s1)) * 180.0 / kPi;
    cams.push_back(orbit_camera(az, el, spec.radius, width, height, spec.fov_x_deg));
  }
  return cams;
}

}  // namespace ro
