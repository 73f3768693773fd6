// The viewer's camera, as pure math (no window, no GL): orbit (turntable about the scene's up axis), pan, dolly,
// fly (look around and move), snapping exactly onto a scene camera, field of view. Cameras are OpenCV
// camera-to-world with pixel intrinsics at the working size, as everywhere in lact.
#pragma once

#include <vector>

#include "core/camera.h"
#include "core/camera_geometry.h"

namespace lact::session {

// What the scene's cameras say about its world: which way is up (the mean of their "up" axes, -y of an
// OpenCV camera-to-world, so z-up object renders orbit about z; a world axis when within about 18 degrees of
// it), the point they look at (the pivot) and how far they are from it (the scale for speeds and clamps).
struct SceneFrame {
  Vec3 up{0, 0, 1};
  Vec3 pivot{0, 0, 0};
  double scale = 1;  // median camera distance to the pivot
};
SceneFrame scene_frame(const std::vector<Camera>& cameras);

class CameraController {
 public:
  // Starts exactly at `start` (scene view `start_view`, or -1).
  CameraController(const SceneFrame& frame, const Camera& start, int start_view = -1);

  // Exactly `camera` (pose and intrinsics); `view` is the scene view it is (-1: none). The orbit target
  // becomes the point on its optical axis nearest the pivot.
  void snap(const Camera& camera, int view);
  void reset();  // back to the start camera

  // Turntable about the target: `yaw` radians about the up axis, `pitch` radians raising the camera
  // (its elevation above the plane normal to up stays within +-89 degrees).
  void orbit(double yaw, double pitch);
  // Fly: turns the camera about its own centre (the viewing direction stays within +-89 degrees of the plane).
  void look(double yaw, double pitch);
  // Moves camera and target in the image plane by (dx, dy) pixels at the working size, measured at the target.
  void pan(double dx, double dy);
  // Towards the target: the distance is multiplied by 0.85 per step (negative steps move away).
  void dolly(double steps);
  // Fly: moves camera and target by (right, up, forward) * speed * seconds; "up" is the scene's up.
  void move(const Vec3& direction, double seconds);

  // Horizontal field of view in degrees from fx and the width; setting it scales fx and fy together.
  double hfov() const;
  void set_hfov(double degrees);

  const Camera& camera() const { return camera_; }
  int snapped_view() const { return snapped_view_; }
  const Vec3& target() const { return target_; }
  double distance() const { return distance_; }
  const SceneFrame& frame() const { return frame_; }

  double speed = 1;  // world units per second for move() (starts at the scene scale)

 private:
  void rotate(const Vec3& pivot, const Vec3& axis, double angle);  // camera and target about an axis
  void place_target();
  void moved() { snapped_view_ = -1; }

  SceneFrame frame_;
  Camera start_;
  int start_view_ = -1;
  Camera camera_;
  Vec3 target_{};
  double distance_ = 1;
  int snapped_view_ = -1;
};

// The camera rendered at `scale` of its size: each side round(side * scale) to a multiple of `multiple` (at
// least `multiple`), intrinsics scaled per axis by the size ratio. scale 1 gives the camera unchanged.
Camera scaled_camera(const Camera& camera, double scale, int multiple);

// Equality of everything a render depends on (size, intrinsics, pose).
bool same_camera(const Camera& a, const Camera& b);

}  // namespace lact::session
