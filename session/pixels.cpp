#include "session/pixels.h"

#include <algorithm>
#include <cmath>

#include "datasets/image_io.h"

namespace lact::session {

Rgb8 to_rgb8(const Image& image) {
  Rgb8 out;
  out.width = image.width;
  out.height = image.height;
  out.pixels.resize(image.rgb.size());
  for (size_t i = 0; i < image.rgb.size(); ++i)
    out.pixels[i] = static_cast<uint8_t>(std::lround(std::clamp(image.rgb[i], 0.0f, 1.0f) * 255.0f));
  return out;
}

void write_png(const std::string& path, const Rgb8& image) {
  Image f;
  f.width = image.width;
  f.height = image.height;
  f.rgb.resize(image.pixels.size());
  for (size_t i = 0; i < image.pixels.size(); ++i) f.rgb[i] = image.pixels[i] / 255.0f;  // round-trips exactly
  lact::write_png(path, f);
}

void flip_rows(Rgb8& image) {
  const size_t row = static_cast<size_t>(image.width) * 3;
  for (int y = 0; y < image.height / 2; ++y)
    std::swap_ranges(image.pixels.begin() + y * row, image.pixels.begin() + (y + 1) * row,
                     image.pixels.begin() + (image.height - 1 - y) * row);
}

}  // namespace lact::session
