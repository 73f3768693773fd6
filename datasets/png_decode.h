// PNG decoding with libspng: every chunk's CRC and the zlib stream's checksum are checked, so a flipped byte
// is an error, never data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "datasets/image_io.h"

namespace lact {

// RGBA8 as PIL's convert("RGBA") gives it (16-bit samples keep their high byte, low bit depths are scaled,
// palette and tRNS transparency applied). has_alpha: colour types with alpha, or a tRNS chunk
// (as stb_image reported it).
// 16-bit greyscale is refused (PIL clips it to 0..255 rather than scaling). Errors are Error(name, ...).
Rgba8Image decode_png(const std::string& name, const uint8_t* data, size_t size);

// The IHDR's width and height, reading only the signature and IHDR from `file`; false when they are not valid.
bool png_size(FILE* file, int& width, int& height);

}  // namespace lact
