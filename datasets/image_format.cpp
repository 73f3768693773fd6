#include "datasets/image_format.h"

#include <cstring>

#include "core/camera.h"
#include "system/error.h"

namespace lact {

namespace {

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t length) {
  return size >= length && std::memcmp(data, magic, length) == 0;
}

// Formats stb_image (the decoder lact used before) and common tools read; named so that the refusal says
// what the file really is.
const char* other_format_name(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "GIF87a", 6) || starts_with(d, n, "GIF89a", 6)) return "GIF";
  if (starts_with(d, n, "8BPS", 4)) return "PSD";
  if (starts_with(d, n, "#?RADIANCE", 10) || starts_with(d, n, "#?RGBE", 6)) return "Radiance HDR";
  if (starts_with(d, n, "\x53\x80\xF6\x34", 4)) return "Softimage PIC";
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' && (d[2] == ' ' || (d[2] >= '\t' && d[2] <= '\r')))
    return "PNM";
  if (starts_with(d, n, "BM", 2)) return "BMP";
  if (starts_with(d, n, "II*\0", 4) || starts_with(d, n, "MM\0*", 4)) return "TIFF";
  if (n >= 12 && starts_with(d, n, "RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) return "WebP";
  if (starts_with(d, n, "qoif", 4)) return "QOI";
  if (starts_with(d, n, "\0\0\0\x0CjP  ", 8) || starts_with(d, n, "\xFF\x4F\xFF\x51", 4)) return "JPEG 2000";
  if (n >= 12 && std::memcmp(d + 4, "ftyp", 4) == 0) return "HEIF/AVIF (ISO media)";
  if (starts_with(d, n, "\x76\x2F\x31\x01", 4)) return "OpenEXR";
  if (starts_with(d, n, "\x8AMNG", 4)) return "MNG";
  return "";
}

}  // namespace

SniffedFormat sniff_image_format(const uint8_t* data, size_t size) {
  if (starts_with(data, size, "\x89PNG\r\n\x1A\n", 8)) return {ImageFormat::png, "PNG"};
  if (starts_with(data, size, "\xFF\xD8\xFF", 3)) return {ImageFormat::jpeg, "JPEG"};
  return {ImageFormat::other, other_format_name(data, size)};
}

std::string not_png_or_jpeg(const SniffedFormat& sniffed, size_t size) {
  if (size == 0) return "not a PNG or JPEG (the file is empty)";
  if (sniffed.name.empty()) return "not a PNG or JPEG (unrecognised content)";
  return "not a PNG or JPEG (looks like " + sniffed.name + ")";
}

void require_decodable_size(const std::string& name, uint64_t width, uint64_t height) {
  if (width == 0 || height == 0)
    throw Error(name, "image header declares a size of " + std::to_string(height) + "x" + std::to_string(width));
  if (width > static_cast<uint64_t>(kMaxImageSide) || height > static_cast<uint64_t>(kMaxImageSide) ||
      width * height > static_cast<uint64_t>(kMaxImagePixels))
    throw Error(name, "image of " + std::to_string(height) + "x" + std::to_string(width) +
                          " (HxW) exceeds the limit of " + std::to_string(kMaxImageSide) + " a side and " +
                          std::to_string(kMaxImagePixels >> 20) +
                          " Mpixel: downscale it first (the models work at a few hundred pixels a side)");
}

}  // namespace lact
