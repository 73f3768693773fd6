// Photographs as texture sources for procedural objects (issue 15: "photographic textures"): random square crops,
// resampled to a small texture, so a few photographs give many different surfaces.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rng.h"
#include "texture.h"

namespace ro {

class PhotoLibrary {
 public:
  PhotoLibrary() = default;
  // PNG or JPEG files, or folders holding them (not searched recursively; sorted by name, so the order and
  // hence the renders do not depend on the file system). Throws std::runtime_error naming a file that cannot be
  // read or decoded, or a folder without images.
  static PhotoLibrary load(const std::vector<std::string>& paths);

  bool empty() const { return photos_.empty(); }
  size_t size() const { return photos_.size(); }

  // A crop of a random photograph: a square of side 25-100% of the photograph's shorter side at a random place,
  // possibly mirrored, resampled (box filter) to size x size, opaque.
  std::shared_ptr<const Texture> random_crop(Rng& rng, int size = 128) const;

 private:
  struct Photo {
    std::string name;
    int width = 0, height = 0;
    std::vector<uint8_t> rgba;
  };
  std::vector<Photo> photos_;
};

}  // namespace ro
