// A COLMAP model made on images of one size carried over to the same images at another: `lact import` runs
// COLMAP on images large enough for a good focal estimate (the estimation folder) and writes the scene's images
// at --max-size; the model is then rescaled to those. COLMAP's pixel coordinates have the image's top-left corner
// at (0, 0), so a resize by sx, sy maps every point (x, y) to (sx x, sy y): focal lengths and principal points
// scale by the ratio of the sides (a model with one focal length by the geometric mean of the two ratios), the
// distortion coefficients (of normalised coordinates) are kept, and each image's 2D points scale too.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>

namespace lact {

// Rescales the model in `folder` (binary or text, rewritten in its own format) to the sizes `sizes` gives by
// image name (width, height); an image it does not name keeps its camera's size. A camera whose images come to
// different sizes is split, one per size; the cameras are renumbered from 1 in the order images first use them,
// and a camera no registered image uses is dropped. Error naming the file for a malformed model.
void rescale_colmap_model(const std::filesystem::path& folder, const std::map<std::string, std::pair<int, int>>& sizes);

}  // namespace lact
