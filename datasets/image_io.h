// Image files: decoding (PNG, JPEG, BMP, TGA through stb_image) and writing PNG / NumPy .npy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/camera.h"

namespace lact {

struct Rgba8Image {
  int width = 0, height = 0;
  bool has_alpha = false;       // the file had an alpha channel
  std::vector<uint8_t> pixels;  // width * height * 4
};

// Throws Error(path, ...) when the file is missing or cannot be decoded.
Rgba8Image read_image(const std::string& path);
// The size from the file's header only; false when unreadable.
bool read_image_size(const std::string& path, int& width, int& height);

void write_png(const std::string& path, const Image& image);
// float32 [H, W, 3] in standard NumPy .npy (format 1.0).
void write_npy(const std::string& path, const Image& image);

}  // namespace lact
