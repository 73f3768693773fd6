// Camera geometry without I/O: camera paths (turntable, orbit, interpolation) and nearest-view search.
#pragma once

#include <array>
#include <vector>

#include "core/camera.h"
#include "core/vec3.h"

namespace lact {

// OpenCV camera-to-world at `position` looking at `target`, image "up" along `up` (R = [right, -up, forward]).
std::array<double, 16> look_at(const Vec3& position, const Vec3& target, const Vec3& up);

// Pinhole intrinsics for a horizontal field of view (degrees), principal point at the centre.
Camera pinhole(int width, int height, double hfov_degrees);

// The official LaCT demo turntable (inference.py get_turntable_cameras_with_zoom_in): azimuth 0..360 (not
// repeating the start), elevation 30 + 15 sin(phase) degrees and radius (r0+r1)/2 + (r1-r0)/2 sin(phase) with
// phase over [0, 2 pi] inclusive, z up, looking at the origin; hfov 50 by default.
std::vector<Camera> turntable_path(int frames, int width, int height, double hfov = 50, double min_radius = 1.7,
                                   double max_radius = 3.0, double elevation = 30);

// A circle around `target` at `radius` and `elevation` degrees (above the plane normal to `up`), starting at
// `start_azimuth` degrees.
std::vector<Camera> orbit_path(int frames, const Camera& intrinsics, const Vec3& target, const Vec3& up, double radius,
                               double elevation, double start_azimuth = 0);

// An orbit around the point `cameras` look at (look_at_point): `radius` (0: their mean distance from it), up the
// negated mean of their image y axes, the first camera's intrinsics (`lact path orbit`); the first frame at the
// first camera's azimuth about that point (at `elevation`, not the camera's own).
std::vector<Camera> orbit_around(const std::vector<Camera>& cameras, int frames, double radius, double elevation);

// Through `keys` in order: positions and intrinsics linear, rotations by quaternion slerp; `frames_per_segment`
// frames per consecutive pair (the last key closes the path).
std::vector<Camera> interpolate_path(const std::vector<Camera>& keys, int frames_per_segment);
// `frames` cameras in all through `keys`, evenly spaced along them (frame i at key position i (K-1)/(frames-1)):
// the first frame is the first key and the last frame the last key; one frame is the first key.
// `smoothness` in [0, 1] blends positions and rotations from piecewise linear / slerp (0: exactly that) towards a
// uniform Catmull-Rom spline through the keys (1; the end keys repeated, quaternions sign-aligned to their
// neighbours and renormalised), so the path turns through a key instead of at it. Intrinsics stay linear.
std::vector<Camera> interpolate_path_frames(const std::vector<Camera>& keys, int frames, double smoothness = 0);

// Rotation matrix (row-major 3x3 in a 4x4 c2w) <-> unit quaternion (w, x, y, z), and slerp.
std::array<double, 4> rotation_to_quaternion(const std::array<double, 16>& c2w);
void quaternion_to_rotation(const std::array<double, 4>& q, std::array<double, 16>& c2w);
std::array<double, 4> slerp(std::array<double, 4> a, const std::array<double, 4>& b, double t);

// Index into `candidates` of the camera closest to `target`: largest cosine between viewing directions,
// ties (within 1e-6) broken by the smaller centre distance.
int nearest_camera(const std::vector<Camera>& candidates, const Camera& target);

// A point the cameras look at: the least-squares closest point to their optical axes.
Vec3 look_at_point(const std::vector<Camera>& cameras);

}  // namespace lact
