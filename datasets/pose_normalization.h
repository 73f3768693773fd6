// Scene pose normalisation (the official normalize_with_mean_pose): move the world so the mean camera
// sits at the origin looking down +z with its mean "down" along +y, then scale translations into [-1, 1].
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/camera.h"

namespace lact {

enum class PoseNormalization { None, Inputs, All };  // none (objects); from the inputs only; from every view

// "none" | "inputs" | "all"; else an Error naming `flag`.
PoseNormalization parse_pose_normalization(const std::string& text, const std::string& flag = "--normalize-poses");
// "none" | "inputs" | "all", as parse_pose_normalization reads it.
const char* pose_normalization_name(PoseNormalization normalization);

struct PoseTransform {
  std::array<double, 16> world{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};  // c2w' = world * c2w
  double scale = 1.0;  // then every translation is divided by this (max |t| of the reference cameras)
};

// From the reference cameras: centre = mean of the camera centres; z = normalize(mean forward);
// x = normalize(mean_y x z); y = normalize(z x x); world = inverse([x y z centre]).
PoseTransform mean_pose_transform(const std::vector<Camera>& reference);
Camera apply_pose_transform(const PoseTransform& t, const Camera& camera);

}  // namespace lact
