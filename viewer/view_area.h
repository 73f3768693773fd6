// Where the images go: the novel view (and, when shown, the ground truth and the error map beside it) drawn
// into the area right of the side panel, each working-size pixel as an integer block of framebuffer pixels at
// integer positions, so the window shows the rendered pixels exactly (screenshots can be compared with
// `lact render`). Drawn on ImGui's background list: no ImGui window covers it.
#pragma once

#include <string>
#include <vector>

#include "viewer/texture.h"

namespace lact::viewer {

struct ViewLayout {
  // Framebuffer pixels, top-left origin.
  int x = 0, y = 0;           // the novel view's top-left corner
  int width = 0, height = 0;  // its size on screen: working size * zoom
  double zoom = 1;            // framebuffer pixels per working-size pixel (an integer when >= 1)
  int step = 0;               // from one tile's left edge to the next
  int tiles = 1;
  float framebuffer_scale = 1;  // framebuffer pixels per ImGui unit
};

// Lays out `tiles` images of `working_width` x `working_height` side by side in the area (ImGui units).
ViewLayout layout_view(float area_x, float area_y, float area_width, float area_height, int working_width,
                       int working_height, int tiles, float framebuffer_scale);

struct Tile {
  const Texture* texture = nullptr;  // null or empty: a placeholder with the label
  std::string label;
};
void draw_view(const ViewLayout& layout, const std::vector<Tile>& tiles);

// Whether the point (ImGui units) is over the novel view.
bool over_view(const ViewLayout& layout, float x, float y);

}  // namespace lact::viewer
