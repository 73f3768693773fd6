#include "datasets/pose_normalization.h"

#include <cmath>
#include <string>

#include "core/vec3.h"
#include "datasets/json_util.h"
#include "system/error.h"

namespace lact {

namespace {
// The mean pose needs cameras that face one way on average. Cameras all around an object, looking in, cancel out:
// their mean forward axis is nothing, or (above the object) straight down, along their mean up axis.
std::string degenerate_mean(const std::string& what) {
  return "pose normalisation (--normalize-poses): the cameras' " + what +
         " (cameras all around, looking in, as around an object): it is meant for captures that face one way; "
         "leave it off (none) for such a scene";
}
}  // namespace

PoseNormalization parse_pose_normalization(const std::string& text, const std::string& flag) {
  if (text == "none") return PoseNormalization::None;
  if (text == "inputs") return PoseNormalization::Inputs;
  if (text == "all") return PoseNormalization::All;
  throw Error(flag, "'" + text + "' is not none, inputs or all");
}

const char* pose_normalization_name(PoseNormalization normalization) {
  switch (normalization) {
    case PoseNormalization::Inputs:
      return "inputs";
    case PoseNormalization::All:
      return "all";
    case PoseNormalization::None:
      break;
  }
  return "none";
}

PoseTransform mean_pose_transform(const std::vector<Camera>& reference) {
  if (reference.empty()) throw Error("pose normalisation needs at least one camera");
  Vec3 centre{}, forward{}, down{};
  for (const Camera& c : reference)
    for (int r = 0; r < 3; ++r) {
      centre[r] += c.c2w[r * 4 + 3] / reference.size();
      forward[r] += c.c2w[r * 4 + 2] / reference.size();
      down[r] += c.c2w[r * 4 + 1] / reference.size();
    }
  const Vec3 z = normalized(forward, degenerate_mean("forward axes cancel out"));
  const Vec3 x = normalized(cross(down, z), degenerate_mean("mean forward axis is along their mean up axis"));
  const Vec3 y = normalized(cross(z, x), degenerate_mean("mean forward axis is along their mean up axis"));
  const std::array<double, 16> mean{x[0], y[0], z[0], centre[0], x[1], y[1], z[1], centre[1],
                                    x[2], y[2], z[2], centre[2], 0,    0,    0,    1};
  PoseTransform t;
  if (!invert4(mean, t.world)) throw Error("pose normalisation: the mean pose is singular");
  double largest = 0;
  for (const Camera& c : reference) {
    const auto moved = multiply4(t.world, c.c2w);
    for (int r = 0; r < 3; ++r) largest = std::max(largest, std::abs(moved[r * 4 + 3]));
  }
  t.scale = largest > 1e-12 ? largest : 1.0;  // a single camera sits at the origin: nothing to scale
  return t;
}

Camera apply_pose_transform(const PoseTransform& t, const Camera& camera) {
  Camera c = camera;
  c.c2w = multiply4(t.world, camera.c2w);
  for (int r = 0; r < 3; ++r) c.c2w[r * 4 + 3] /= t.scale;
  return c;
}

}  // namespace lact
