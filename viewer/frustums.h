// The scene's cameras drawn as wireframe pyramids over the novel view (Display panel, --frustums): the inputs in
// orange, the test views in cyan, so a user sees at once whether an import found a sensible rig. Each pyramid
// is the camera's centre and its image rectangle at `depth` in front of it; its edges are projected through the
// camera on screen (OpenCV axes, pixel intrinsics), clipped at a near plane, and drawn as 1-pixel lines.
#pragma once

#include <vector>

#include "core/camera.h"
#include "viewer/view_area.h"

namespace lact::viewer {

struct Segment {
  double x0, y0, x1, y1;  // pixels of the viewing camera's image (its width x height)
};

// The eight edges of `frustum`'s pyramid seen through `viewer`, clipped to z >= near in its camera space
// (edges wholly behind it are left out).
std::vector<Segment> frustum_segments(const Camera& frustum, double depth, const Camera& viewer);

// The pyramids' depth: a tenth of the largest distance of a camera centre from the centres' mean (1 when the
// cameras all sit at one point).
double frustum_depth(const std::vector<Camera>& cameras);

struct FrustumColours {
  unsigned input, test;  // IM_COL32
};
constexpr FrustumColours kFrustumColours{0xFF00A0FFu, 0xFFFFC800u};  // ABGR: orange (255,160,0), cyan (0,200,255)

// Draws the pyramids of `cameras` (role 'i' input, 't' test, other: not drawn) over the novel view of `layout`,
// seen through `viewer` (the camera of the image shown), clipped to the view.
void draw_frustums(const ViewLayout& layout, const Camera& viewer, const std::vector<Camera>& cameras,
                   const std::vector<char>& roles, double depth);

}  // namespace lact::viewer
