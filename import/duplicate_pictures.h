// Pictures an import has already taken: a photo copied twice under two names, or a video's repeated frame,
// is the same picture pixel for pixel (after its EXIF orientation). COLMAP gains nothing from a copy, and a
// copy held out as a test view is scored against its twin among the inputs: the score of a view the model saw
// (PSNR of the nearest input 100 dB), which the report would not say. So the copy is skipped, naming the twin.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "datasets/image_io.h"

namespace lact {

class DuplicatePictures {
 public:
  // Reads a file taken earlier upright again, to confirm a match of hashes pixel for pixel.
  using ReadUpright = std::function<Rgba8Image(const std::string& file)>;
  explicit DuplicatePictures(ReadUpright read_upright) : read_upright_(std::move(read_upright)) {}

  // The name (`shown`) of an earlier picture with exactly the pixels of `upright`, read from `file`; "" when
  // there is none, after which this one is remembered as `shown`.
  std::string earlier_copy(const Rgba8Image& upright, const std::string& file, const std::string& shown);

 private:
  struct Taken {
    std::string file, shown;
  };
  bool same_pixels(const Rgba8Image& upright, const std::string& earlier_file) const;
  ReadUpright read_upright_;
  std::unordered_multimap<uint64_t, Taken> taken_;  // by the hash of their size and pixels
};

// A 64-bit hash of an image's size and pixels (equal images, equal hashes; a match is confirmed by the pixels).
uint64_t picture_hash(const Rgba8Image& image);

}  // namespace lact
