#include "datasets/image_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

// stb is used for writing PNGs and resizing (its implementations live here); decoding is libspng and libjpeg.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>
#include <stb/stb_image_write.h>

#include "datasets/image_format.h"
#include "datasets/jpeg_decode.h"
#include "datasets/png_decode.h"
#include "datasets/png_tag.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace {

// The largest image file read: a 64 Mpixel 16-bit RGBA PNG stored without compression, plus its chunks.
constexpr uint64_t kMaxImageFileBytes = static_cast<uint64_t>(kMaxImagePixels) * 8 + (uint64_t{64} << 20);

}  // namespace

Rgba8Image decode_image(const std::string& name, const uint8_t* data, size_t size) {
  const SniffedFormat sniffed = sniff_image_format(data, size);
  switch (sniffed.format) {
    case ImageFormat::png:
      return decode_png(name, data, size);
    case ImageFormat::jpeg:
      return decode_jpeg(name, data, size);
    case ImageFormat::other:
      break;
  }
  throw Error(name, not_png_or_jpeg(sniffed, size));
}

Rgba8Image read_image(const std::string& path) {
  require_regular_file(path);
  // Owned bytes, not a mapping: a file changed while it is decoded cannot fault or tear the image.
  const std::string bytes = read_whole_file(path, kMaxImageFileBytes);
  return decode_image(path, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

bool read_image_size(const std::string& path, int& width, int& height) {
  try {
    require_regular_file(path);
  } catch (const Error&) {
    return false;
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return false;
  uint8_t magic[16];
  const size_t got = std::fread(magic, 1, sizeof magic, file.get());
  if (std::fseek(file.get(), 0, SEEK_SET) != 0) return false;
  switch (sniff_image_format(magic, got).format) {
    case ImageFormat::png:
      return png_size(file.get(), width, height);
    case ImageFormat::jpeg:
      return jpeg_size(file.get(), width, height);
    case ImageFormat::other:
      break;
  }
  return false;
}

namespace {
void append_to_string(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
}
}  // namespace

void write_png(const std::string& path, const Image& image) {
  std::vector<unsigned char> bytes(image.rgb.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(std::lround(std::clamp(image.rgb[i], 0.0f, 1.0f) * 255.0f));
  const std::string png = encode_png(image.width, image.height, bytes.data());
  if (png.empty()) throw Error(path, "cannot encode PNG");
  write_file_atomically(path, with_lact_tag(png));
}

std::string encode_png(int width, int height, const uint8_t* rgb) {
  std::string png;
  if (!stbi_write_png_to_func(append_to_string, &png, width, height, 3, rgb, width * 3)) return {};
  return png;
}

std::string npy_prefix(int height, int width) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(height) + ", " +
                       std::to_string(width) + ", 3), }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64, ending in \n.
  while ((10 + header.size() + 1) % 64) header.push_back(' ');
  header.push_back('\n');
  const size_t length = header.size();
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(length & 0xff) + static_cast<char>(length >> 8) +
         header;
}

void write_npy(const std::string& path, const Image& image) {
  AtomicFile out(path);
  out.write(npy_prefix(image.height, image.width));
  out.write(image.rgb.data(), 4 * image.rgb.size());
  out.commit();
}

}  // namespace lact
