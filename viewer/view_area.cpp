#include "viewer/view_area.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace lact::viewer {

namespace {
constexpr int kGap = 8;     // framebuffer pixels between tiles
constexpr int kLabel = 22;  // room under the tiles for their labels (ImGui units)
}  // namespace

ViewLayout layout_view(float area_x, float area_y, float area_width, float area_height, int working_width,
                       int working_height, int tiles, float framebuffer_scale) {
  ViewLayout l;
  l.tiles = std::max(1, tiles);
  l.framebuffer_scale = framebuffer_scale > 0 ? framebuffer_scale : 1;
  const double s = l.framebuffer_scale;
  const double left = std::ceil(area_x * s), top = std::ceil(area_y * s);
  const double width = std::floor((area_x + area_width) * s) - left - 2 * kGap;
  const double height = std::floor((area_y + area_height - kLabel) * s) - top - 2 * kGap;
  if (working_width <= 0 || working_height <= 0) return l;
  double zoom = std::min((width - (l.tiles - 1) * kGap) / (static_cast<double>(l.tiles) * working_width),
                         height / working_height);
  zoom = zoom >= 1 ? std::floor(zoom) : std::max(zoom, 0.05);
  l.zoom = zoom;
  l.width = static_cast<int>(std::lround(working_width * zoom));
  l.height = static_cast<int>(std::lround(working_height * zoom));
  l.step = l.width + kGap;
  const int total = l.tiles * l.width + (l.tiles - 1) * kGap;
  l.x = static_cast<int>(left + kGap + std::max(0.0, std::floor((width - total) / 2)));
  l.y = static_cast<int>(top + kGap + std::max(0.0, std::floor((height - l.height) / 2)));
  return l;
}

void draw_view(const ViewLayout& l, const std::vector<Tile>& tiles) {
  ImDrawList* draw = ImGui::GetBackgroundDrawList();
  const float s = l.framebuffer_scale;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const ImVec2 p0((l.x + static_cast<int>(i) * l.step) / s, l.y / s);
    const ImVec2 p1(p0.x + l.width / s, p0.y + l.height / s);
    const Tile& t = tiles[i];
    // The frame first: at 2 pixels per unit its anti-aliased edge reaches a pixel in, which the image then covers.
    draw->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32(90, 90, 96, 255));
    if (t.texture && !t.texture->empty()) {
      draw->AddImage(t.texture->imgui_id(), p0, p1);
    } else {
      draw->AddRectFilled(p0, p1, IM_COL32(40, 40, 44, 255));
    }
    draw->AddText(ImVec2(p0.x, p1.y + 4), IM_COL32(200, 200, 205, 255), t.label.c_str());
  }
}

bool over_view(const ViewLayout& l, float x, float y) {
  const float s = l.framebuffer_scale;
  return x * s >= l.x && x * s < l.x + l.width && y * s >= l.y && y * s < l.y + l.height;
}

}  // namespace lact::viewer
