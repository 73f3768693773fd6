// Image sizes as every size flag writes them (height x width, as --size) and a camera taken to another size.
// The bare "HxW" parser with its bounds is core/camera.h's parse_image_size.
#pragma once

#include <string>
#include <utility>

#include "core/camera.h"

namespace lact {

// "HxW" (or a single N for NxN) -> {H, W}; empty -> {0, 0}; anything else an Error naming `flag`.
std::pair<int, int> parse_size(const std::string& text, const std::string& flag = "--size");

// `camera` with its intrinsics scaled to height x width (the same camera when it has that size; in doubles,
// rounded once to float). Error when the camera has no size to scale from. No check that the aspect agrees:
// callers that take an image for a camera check that (datasets/preprocess.cpp).
Camera camera_at_size(const Camera& camera, int height, int width);

}  // namespace lact
