#include "import/duplicate_pictures.h"

#include <cstring>

#include "system/error.h"

namespace lact {

uint64_t picture_hash(const Rgba8Image& image) {
  // Eight bytes a step, each mixed by a multiply and a rotation (a hash to find candidates, not a checksum:
  // every match is compared pixel for pixel).
  constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;
  uint64_t hash = (static_cast<uint64_t>(image.width) << 32) ^ static_cast<uint64_t>(image.height);
  const std::vector<uint8_t>& bytes = image.pixels;
  size_t at = 0;
  for (; at + 8 <= bytes.size(); at += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + at, 8);
    hash = ((hash ^ word) * kMultiplier);
    hash ^= hash >> 29;
  }
  for (; at < bytes.size(); ++at) hash = (hash ^ bytes[at]) * kMultiplier;
  return hash ^ (hash >> 32);
}

bool DuplicatePictures::same_pixels(const Rgba8Image& upright, const std::string& earlier_file) const {
  try {
    const Rgba8Image earlier = read_upright_(earlier_file);
    return earlier.width == upright.width && earlier.height == upright.height && earlier.pixels == upright.pixels;
  } catch (const Error&) {  // changed or gone since it was taken: not known to be the same picture
    return false;
  }
}

std::string DuplicatePictures::earlier_copy(const Rgba8Image& upright, const std::string& file,
                                            const std::string& shown) {
  const uint64_t hash = picture_hash(upright);
  const auto [first, last] = taken_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (same_pixels(upright, it->second.file)) return it->second.shown;
  taken_.emplace(hash, Taken{file, shown});
  return "";
}

}  // namespace lact
