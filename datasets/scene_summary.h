// Numbers that describe a scene's cameras (for `lact info --data`).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "datasets/scene.h"

namespace lact {

struct Range {
  double min = 0, max = 0;
};

struct SceneSummary {
  int views = 0;
  std::vector<std::pair<int, int>> sizes;  // distinct (width, height)
  Range fx, fy, cx, cy;
  std::array<Range, 3> centre;  // camera centre bounds per axis
  std::array<double, 3> centroid{};
  Range distance_to_centroid;
  Range distance_to_origin;
  double look_at_origin = 0;  // mean cosine between forward axis and the direction to the origin
  int distorted_views = 0;    // of them fisheye_views through a fisheye lens
  int fisheye_views = 0;
  std::vector<std::pair<std::string, Range>> splits;  // split name -> index range
};

SceneSummary summarize_scene(const Scene& scene);

}  // namespace lact
