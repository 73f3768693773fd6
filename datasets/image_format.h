// Which image format a file's content is, from its first bytes (never from its name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lact {

enum class ImageFormat { png, jpeg, other };

struct SniffedFormat {
  ImageFormat format = ImageFormat::other;
  std::string name;  // "PNG", "JPEG", "GIF", "PSD", ...; "" when the bytes match nothing known
};

// `data` holds the file's first `size` bytes (16 are enough).
SniffedFormat sniff_image_format(const uint8_t* data, size_t size);

// Error text for content lact does not decode: "not a PNG or JPEG (looks like GIF)".
std::string not_png_or_jpeg(const SniffedFormat& sniffed, size_t size);

// Throws Error(name, ...) for a header's size beyond kMaxImageSide a side or kMaxImagePixels in all: checked
// before any pixel memory is allocated (a 373 KB PNG may declare 12000 x 8000, 384 MB decoded).
void require_decodable_size(const std::string& name, uint64_t width, uint64_t height);

}  // namespace lact
