// JPEG decoding with libjpeg-turbo's libjpeg API, the library PIL links, so pixels equal PIL's bit for bit.
// libjpeg's warnings about corrupt data (bad Huffman codes, premature end, extraneous bytes) are errors here:
// it would otherwise fill the rest of the image with grey and carry on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "datasets/image_io.h"

namespace lact {

// RGBA8 (alpha 255) as PIL's convert("RGBA") gives it: greyscale replicated, YCbCr / RGB as libjpeg converts
// them, CMYK and YCCK (Adobe, inverted) through PIL's CMYK-to-RGB arithmetic. Errors are Error(name, ...).
Rgba8Image decode_jpeg(const std::string& name, const uint8_t* data, size_t size);

// The frame header's width and height, reading `file` up to the first scan; false when it cannot be read.
bool jpeg_size(FILE* file, int& width, int& height);

}  // namespace lact
