#include "datasets/scene_summary.h"

#include <algorithm>
#include <cmath>

namespace lact {

namespace {
void extend(Range& r, double v, bool first) {
  if (first) r = {v, v};
  r.min = std::min(r.min, v);
  r.max = std::max(r.max, v);
}
}  // namespace

SceneSummary summarize_scene(const Scene& scene) {
  SceneSummary s;
  s.views = static_cast<int>(scene.views.size());
  for (const SceneView& v : scene.views)
    for (int a = 0; a < 3; ++a) s.centroid[a] += v.camera.c2w[a * 4 + 3] / std::max(1, s.views);
  double cosine_sum = 0;
  for (size_t i = 0; i < scene.views.size(); ++i) {
    const SceneView& v = scene.views[i];
    const Camera& c = v.camera;
    const bool first = i == 0;
    const std::pair<int, int> size{c.width, c.height};
    if (std::find(s.sizes.begin(), s.sizes.end(), size) == s.sizes.end()) s.sizes.push_back(size);
    extend(s.fx, c.fx, first);
    extend(s.fy, c.fy, first);
    extend(s.cx, c.cx, first);
    extend(s.cy, c.cy, first);
    double to_centroid = 0, to_origin = 0, dot = 0;
    for (int a = 0; a < 3; ++a) {
      const double p = c.c2w[a * 4 + 3];
      extend(s.centre[a], p, first);
      to_centroid += (p - s.centroid[a]) * (p - s.centroid[a]);
      to_origin += p * p;
      dot += -p * c.c2w[a * 4 + 2];
    }
    extend(s.distance_to_centroid, std::sqrt(to_centroid), first);
    extend(s.distance_to_origin, std::sqrt(to_origin), first);
    cosine_sum += to_origin > 0 ? dot / std::sqrt(to_origin) : 0;
    s.distorted_views += v.distortion.any();
    s.fisheye_views += v.distortion.fisheye;
    if (s.splits.empty() || s.splits.back().first != v.split) s.splits.push_back({v.split, {double(i), double(i)}});
    s.splits.back().second.max = static_cast<double>(i);
  }
  s.look_at_origin = cosine_sum / std::max(1, s.views);
  if (s.splits.size() == 1 && s.splits[0].first.empty()) s.splits.clear();
  return s;
}

}  // namespace lact
