#include "datasets/image_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>
#include <stb/stb_image_write.h>

#include "core/error.h"

namespace lact {

namespace {

// PIL's Image.paste(rgba, mask=alpha) onto an opaque background, in its integer arithmetic
// (MULDIV255: (a*b + 128 + ((a*b + 128) >> 8)) >> 8), so decoded pixels match the official loader exactly.
inline int muldiv255(int a, int b) {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

}  // namespace

CoverCrop cover_crop(const Camera& camera, int height, int width) {
  const int w = camera.width, h = camera.height;
  const double scale = std::max(static_cast<double>(width) / w, static_cast<double>(height) / h);
  CoverCrop c;
  c.resized_width = std::max(width, static_cast<int>(std::lround(w * scale)));
  c.resized_height = std::max(height, static_cast<int>(std::lround(h * scale)));
  c.left = (c.resized_width - width) / 2;
  c.top = (c.resized_height - height) / 2;
  const float sx = static_cast<float>(c.resized_width) / w, sy = static_cast<float>(c.resized_height) / h;
  c.camera = camera;
  c.camera.fx *= sx;
  c.camera.fy *= sy;
  c.camera.cx = camera.cx * sx - c.left;
  c.camera.cy = camera.cy * sy - c.top;
  c.camera.width = width;
  c.camera.height = height;
  return c;
}

Image load_view_image(const std::string& path, Camera& camera, const LoadOptions& options) {
  int w = 0, h = 0, channels = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load(path.c_str(), &w, &h, &channels, 4), stbi_image_free);
  if (!pixels) throw Error(path, std::string("cannot read image: missing, corrupt or not PNG/JPEG/BMP/TGA (stb_image: ") +
                           stbi_failure_reason() + ")");
  if (w != camera.width || h != camera.height) {
    // The camera's intrinsics are for its stated size; rescale them to the file's actual size.
    const float sx = static_cast<float>(w) / camera.width, sy = static_cast<float>(h) / camera.height;
    camera.fx *= sx, camera.cx *= sx, camera.fy *= sy, camera.cy *= sy;
    camera.width = w, camera.height = h;
  }
  const bool has_alpha = channels == 4 || channels == 2;
  const int out_w = options.width > 0 ? options.width : w, out_h = options.height > 0 ? options.height : h;
  const float bg[3] = {options.background[0], options.background[1], options.background[2]};
  Image image;
  image.width = out_w;
  image.height = out_h;
  image.rgb.resize(static_cast<size_t>(out_w) * out_h * 3);

  if (out_w == w && out_h == h) {
    const bool white = bg[0] == 1.0f && bg[1] == 1.0f && bg[2] == 1.0f;
    for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i) {
      const stbi_uc* p = pixels.get() + 4 * i;
      for (int c = 0; c < 3; ++c) {
        float v;
        if (!has_alpha)
          v = p[c] / 255.0f;
        else if (white)
          v = static_cast<float>(muldiv255(255, 255 - p[3]) + muldiv255(p[c], p[3])) / 255.0f;
        else
          v = (p[c] * p[3] / 255.0f + bg[c] * (255 - p[3])) / 255.0f;
        image.rgb[i * 3 + c] = v;
      }
    }
    return image;
  }

  // Resize to cover the working size, then centre-crop. Filter: Catmull-Rom (a sharp cubic close to
  // the official LANCZOS) in linear [0, 1] values, alpha premultiplied during the resize.
  const CoverCrop crop = cover_crop(camera, out_h, out_w);
  const int rw = crop.resized_width, rh = crop.resized_height, left = crop.left, top = crop.top;
  std::vector<float> source(static_cast<size_t>(w) * h * 4), resized(static_cast<size_t>(rw) * rh * 4);
  for (size_t i = 0; i < source.size(); ++i) source[i] = pixels.get()[i] / 255.0f;
  if (!stbir_resize_float_generic(source.data(), w, h, 0, resized.data(), rw, rh, 0, 4, 3, 0, STBIR_EDGE_CLAMP,
                                  STBIR_FILTER_CATMULLROM, STBIR_COLORSPACE_LINEAR, nullptr))
    throw Error(path, "image resize failed");
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x) {
      const float* p = resized.data() + (static_cast<size_t>(y + top) * rw + x + left) * 4;
      const float a = std::clamp(p[3], 0.0f, 1.0f);
      for (int c = 0; c < 3; ++c)
        image.rgb[(static_cast<size_t>(y) * out_w + x) * 3 + c] = std::clamp(p[c] * a + bg[c] * (1.0f - a), 0.0f, 1.0f);
    }
  camera = crop.camera;
  return image;
}

void write_png(const std::string& path, const Image& image) {
  std::vector<unsigned char> bytes(image.rgb.size());
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(std::lround(std::clamp(image.rgb[i], 0.0f, 1.0f) * 255.0f));
  if (!stbi_write_png(path.c_str(), image.width, image.height, 3, bytes.data(), image.width * 3))
    throw Error(path, "cannot write PNG");
}

void write_npy(const std::string& path, const Image& image) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(image.height) + ", " +
                       std::to_string(image.width) + ", 3), }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64, ending in \n.
  while ((10 + header.size() + 1) % 64) header.push_back(' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(path, "cannot open for writing");
  const unsigned char prefix[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(reinterpret_cast<const char*>(prefix), 8);
  const uint16_t length = static_cast<uint16_t>(header.size());
  const unsigned char len_bytes[2] = {static_cast<unsigned char>(length & 0xff), static_cast<unsigned char>(length >> 8)};
  out.write(reinterpret_cast<const char*>(len_bytes), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(image.rgb.data()), static_cast<std::streamsize>(4 * image.rgb.size()));
  if (!out) throw Error(path, "write failed");
}

}  // namespace lact
