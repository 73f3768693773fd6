// Pinhole cameras in the LaCT/GSO convention: OpenCV axes (x right, y down, z forward), pixel intrinsics with
// pixel centres at +0.5, z-up world, cameras on a sphere around the origin looking at it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vecmath.h"

namespace ro {

struct Camera {
  int width = 0, height = 0;
  double fx = 0, fy = 0, cx = 0, cy = 0;
  Mat4 w2c;  // world -> camera (OpenCV), rigid
  Mat4 c2w() const { return rigid_inverse(w2c); }
};

struct ViewSpec {
  enum class Kind { Fixed64, Random } kind = Kind::Random;
  int count = 32;                                // views for Random (Fixed64 always has 64)
  double radius = 2.7;                           // GSO render distance for an object in [-1,1]^3
  double fov_x_deg = 50.0;                       // horizontal field of view
  double elev_min_deg = -10, elev_max_deg = 70;  // Random: elevation range
};

// Parses "fixed64" or "random:N"; throws std::invalid_argument otherwise.
ViewSpec parse_view_spec(const std::string& text);

// A camera at `eye` looking at `target`, with the image's up (-y) as close as possible to world `up`.
// fx = fy = 0.5 * width / tan(fov_x / 2), cx = width / 2, cy = height / 2.
Camera look_at(const double eye[3], const double target[3], const double up[3], int width, int height,
               double fov_x_deg);

// A camera on the sphere of `radius` at azimuth (counter-clockwise from +x towards +y) and elevation (from the
// xy-plane towards +z), looking at the origin with world +z up.
Camera orbit_camera(double azimuth_deg, double elevation_deg, double radius, int width, int height, double fov_x_deg);

// The views of one object. Fixed64: view 16*e + a at azimuth 22.5*a deg, elevation 20*e deg (the GSO layout).
// Random: `count` views with azimuth uniform and sin(elevation) uniform (uniform on the sphere's band) in
// [elev_min, elev_max], drawn from `seed`.
std::vector<Camera> make_views(const ViewSpec& spec, int width, int height, uint64_t seed);

}  // namespace ro
