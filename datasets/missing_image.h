// Why an image a camera file names is not where it says, when the folder shows why.
#pragma once

#include <string>
#include <vector>

namespace lact {

// "" when `path` exists; else a parenthesised reason to append to "no such image": a file whose name differs only
// in case (a file list made on macOS or Windows), a Windows path's backslashes, only downscaled copies images_N
// beside a missing images/ (--downscale N), or the folder itself missing.
std::string missing_image_hint(const std::string& path);

// The first of `paths` that is not there, with its hint, and how many are not: for `lact info`.
struct MissingImages {
  int count = 0;
  std::string first, hint;
};
MissingImages find_missing_images(const std::vector<std::string>& paths);

}  // namespace lact
