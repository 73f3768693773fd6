// The colour scale an error heat map is read against, drawn under it: a gradient bar from no error (black) to
// the map's saturation (white, mean absolute error 1/gain), with its two ends and its middle labelled.
#pragma once

#include "core/camera.h"

namespace lact {

// Rows the bar adds under a heat map of any width.
constexpr int kErrorScaleBarRows = 16;

// `heat_map` (from error_heat_map with the same `gain`) with the bar and its labels appended below it.
Image with_error_scale_bar(const Image& heat_map, float gain = 4.0f);

}  // namespace lact
