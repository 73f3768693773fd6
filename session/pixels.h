// 8-bit RGB images: what the viewer uploads to textures and reads back from the screen.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/camera.h"

namespace lact::session {

struct Rgb8 {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // rows top to bottom, width * height * 3
  bool empty() const { return pixels.empty(); }
};

// The rounding of datasets' write_png (round(clamp(v, 0, 1) * 255)), so a texture holds what a PNG would.
Rgb8 to_rgb8(const Image& image);
// Through datasets' write_png (Error naming the file).
void write_png(const std::string& path, const Rgb8& image);
// Rows flipped (OpenGL reads bottom-up).
void flip_rows(Rgb8& image);

}  // namespace lact::session
