#include "viewer/frustums.h"

#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace lact::viewer {

namespace {

using Vec3 = std::array<double, 3>;

constexpr double kNear = 1e-3;

Vec3 camera_point(const Camera& c, double x, double y, double z) {  // camera space -> world
  const auto& m = c.c2w;
  return {m[0] * x + m[1] * y + m[2] * z + m[3], m[4] * x + m[5] * y + m[6] * z + m[7],
          m[8] * x + m[9] * y + m[10] * z + m[11]};
}

Vec3 to_camera(const Camera& c, const Vec3& p) {  // world -> camera space (c2w is rigid: the inverse is R^T)
  const auto& m = c.c2w;
  const Vec3 d{p[0] - m[3], p[1] - m[7], p[2] - m[11]};
  return {m[0] * d[0] + m[4] * d[1] + m[8] * d[2], m[1] * d[0] + m[5] * d[1] + m[9] * d[2],
          m[2] * d[0] + m[6] * d[1] + m[10] * d[2]};
}

}  // namespace

std::vector<Segment> frustum_segments(const Camera& f, double depth, const Camera& viewer) {
  // The image rectangle's corners at `depth`: pixel (u, v) is direction ((u - cx) / fx, (v - cy) / fy, 1).
  std::array<Vec3, 5> points;
  points[0] = camera_point(f, 0, 0, 0);
  const double us[4] = {0, double(f.width), double(f.width), 0}, vs[4] = {0, 0, double(f.height), double(f.height)};
  for (int k = 0; k < 4; ++k)
    points[k + 1] = camera_point(f, (us[k] - f.cx) / f.fx * depth, (vs[k] - f.cy) / f.fy * depth, depth);
  std::array<Vec3, 5> seen;
  for (int k = 0; k < 5; ++k) seen[k] = to_camera(viewer, points[k]);
  static const int edges[8][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {2, 3}, {3, 4}, {4, 1}};
  std::vector<Segment> out;
  for (const auto& e : edges) {
    Vec3 a = seen[e[0]], b = seen[e[1]];
    if (a[2] < kNear && b[2] < kNear) continue;
    if (a[2] < kNear || b[2] < kNear) {  // move the end behind the near plane onto it
      Vec3& behind = a[2] < kNear ? a : b;
      const Vec3& front = a[2] < kNear ? b : a;
      const double t = (kNear - front[2]) / (behind[2] - front[2]);
      for (int i = 0; i < 3; ++i) behind[i] = front[i] + t * (behind[i] - front[i]);
    }
    out.push_back({viewer.fx * a[0] / a[2] + viewer.cx, viewer.fy * a[1] / a[2] + viewer.cy,
                   viewer.fx * b[0] / b[2] + viewer.cx, viewer.fy * b[1] / b[2] + viewer.cy});
  }
  return out;
}

double frustum_depth(const std::vector<Camera>& cameras) {
  Vec3 mean{0, 0, 0};
  for (const Camera& c : cameras)
    for (int i = 0; i < 3; ++i) mean[i] += c.c2w[4 * i + 3] / cameras.size();
  double largest = 0;
  for (const Camera& c : cameras) {
    double d2 = 0;
    for (int i = 0; i < 3; ++i) d2 += (c.c2w[4 * i + 3] - mean[i]) * (c.c2w[4 * i + 3] - mean[i]);
    largest = std::max(largest, std::sqrt(d2));
  }
  return largest > 0 ? 0.1 * largest : 1.0;
}

void draw_frustums(const ViewLayout& l, const Camera& viewer, const std::vector<Camera>& cameras,
                   const std::vector<char>& roles, double depth) {
  ImDrawList* draw = ImGui::GetBackgroundDrawList();
  const float s = l.framebuffer_scale;
  const double per_pixel = static_cast<double>(l.width) / viewer.width;  // framebuffer pixels per image pixel
  draw->PushClipRect(ImVec2(l.x / s, l.y / s), ImVec2((l.x + l.width) / s, (l.y + l.height) / s), true);
  for (size_t i = 0; i < cameras.size(); ++i) {
    if (roles[i] != 'i' && roles[i] != 't') continue;
    const unsigned colour = roles[i] == 'i' ? kFrustumColours.input : kFrustumColours.test;
    for (const Segment& g : frustum_segments(cameras[i], depth, viewer)) {
      // Image coordinates put pixel u's centre at u + 0.5 (lact's convention): framebuffer x + u * per_pixel.
      const ImVec2 a(static_cast<float>((l.x + g.x0 * per_pixel) / s),
                     static_cast<float>((l.y + g.y0 * per_pixel) / s));
      const ImVec2 b(static_cast<float>((l.x + g.x1 * per_pixel) / s),
                     static_cast<float>((l.y + g.y1 * per_pixel) / s));
      draw->AddLine(a, b, colour, 1.0f);
    }
  }
  draw->PopClipRect();
}

}  // namespace lact::viewer
