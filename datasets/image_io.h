// Image files: decoding PNG (libspng) and JPEG (libjpeg-turbo), chosen by content, never by name; writing
// PNG / NumPy .npy.
#pragma once

#include <cstddef>
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

// PNG or JPEG content as PIL's Image.open(...).convert("RGBA") decodes it. Anything else (GIF, PSD, HDR, PNM,
// BMP, ... whatever the name), a corrupt or truncated file, or a header beyond kMaxImagePixels is Error(name, ...),
// the size checked before pixel memory is allocated.
Rgba8Image decode_image(const std::string& name, const uint8_t* data, size_t size);
// decode_image on the file's bytes. Throws Error(path, ...) when the file is missing, not regular, or not decodable.
Rgba8Image read_image(const std::string& path);
// The size from a PNG or JPEG header only; false when unreadable, another format, or a side beyond kMaxImageSide.
bool read_image_size(const std::string& path, int& width, int& height);

// An 8-bit RGB PNG file marked as lact's (datasets/png_tag.h).
void write_png(const std::string& path, const Image& image);
// The PNG file write_png writes, without lact's mark, in memory, of 8-bit RGB rows (width * height * 3 bytes, top row
// first).
std::string encode_png(int width, int height, const uint8_t* rgb);
// float32 [H, W, 3] in standard NumPy .npy (format 1.0).
void write_npy(const std::string& path, const Image& image);
// The bytes write_npy puts before the pixels of a height x width image (magic, version, header).
std::string npy_prefix(int height, int width);

}  // namespace lact
