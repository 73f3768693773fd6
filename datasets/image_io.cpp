#include "datasets/image_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>
#include <stb/stb_image_write.h>

#include "core/error.h"
#include "core/file_io.h"

namespace lact {

Rgba8Image read_image(const std::string& path) {
  require_regular_file(path);
  // The header first: a small file may declare a huge image (a 373 KB PNG of 12000 x 8000 decodes to 384 MB).
  int width = 0, height = 0, channels = 0;
  if (stbi_info(path.c_str(), &width, &height, &channels) == 1 &&
      static_cast<int64_t>(width) * height > kMaxImagePixels)
    throw Error(path, "image of " + std::to_string(width) + "x" + std::to_string(height) + " exceeds the limit of " +
                          std::to_string(kMaxImagePixels >> 20) + " Mpixel");
  Rgba8Image image;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load(path.c_str(), &image.width, &image.height, &channels, 4),
                                                   stbi_image_free);
  if (!pixels)
    throw Error(path, std::string("cannot read image: missing, corrupt or not PNG/JPEG/BMP/TGA (stb_image: ") +
                          stbi_failure_reason() + ")");
  image.has_alpha = channels == 4 || channels == 2;
  image.pixels.assign(pixels.get(), pixels.get() + static_cast<size_t>(image.width) * image.height * 4);
  return image;
}

bool read_image_size(const std::string& path, int& width, int& height) {
  try {
    require_regular_file(path);
  } catch (const Error&) {
    return false;
  }
  int channels = 0;
  return stbi_info(path.c_str(), &width, &height, &channels) == 1 && width <= kMaxImageSide && height <= kMaxImageSide;
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
  std::string png;
  if (!stbi_write_png_to_func(append_to_string, &png, image.width, image.height, 3, bytes.data(), image.width * 3))
    throw Error(path, "cannot encode PNG");
  write_file_atomically(path, png);
}

void write_npy(const std::string& path, const Image& image) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(image.height) + ", " +
                       std::to_string(image.width) + ", 3), }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64, ending in \n.
  while ((10 + header.size() + 1) % 64) header.push_back(' ');
  header.push_back('\n');
  AtomicFile out(path);
  const unsigned char prefix[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(prefix, 8);
  const uint16_t length = static_cast<uint16_t>(header.size());
  const unsigned char len_bytes[2] = {static_cast<unsigned char>(length & 0xff), static_cast<unsigned char>(length >> 8)};
  out.write(len_bytes, 2);
  out.write(header);
  out.write(image.rgb.data(), 4 * image.rgb.size());
  out.commit();
}

}  // namespace lact
