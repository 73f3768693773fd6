#include "serve/frame_encoding.h"

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>

#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "datasets/image_io.h"
#include "system/error.h"

namespace lact::serve {

namespace {

// libjpeg reports errors through a callback that must not return: ours jumps back into compress() (no C++ object
// lives between the setjmp and the libjpeg calls), as datasets/jpeg_decode does.
struct Errors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void jump_back(j_common_ptr info) { std::longjmp(reinterpret_cast<Errors*>(info->err)->jump, 1); }

// True when `image` was compressed into `*bytes` (malloc'd by libjpeg; the caller frees it either way).
bool compress(const session::Rgb8& image, int quality, unsigned char** bytes, unsigned long* size) {
  jpeg_compress_struct info{};
  Errors errors{};
  info.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = jump_back;
  if (setjmp(errors.jump)) {
    jpeg_destroy_compress(&info);
    return false;
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, bytes, size);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  const size_t row = static_cast<size_t>(image.width) * 3;
  while (info.next_scanline < info.image_height) {
    JSAMPROW rows[1] = {const_cast<JSAMPLE*>(image.pixels.data() + info.next_scanline * row)};
    jpeg_write_scanlines(&info, rows, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  return true;
}

}  // namespace

std::string encode_jpeg(const session::Rgb8& image, int quality) {
  if (image.empty()) throw Error("JPEG", "no image");
  unsigned char* bytes = nullptr;
  unsigned long size = 0;
  const bool ok = compress(image, quality, &bytes, &size);
  std::string out = ok ? std::string(reinterpret_cast<const char*>(bytes), size) : std::string();
  std::free(bytes);
  if (!ok) throw Error("JPEG", "cannot encode the frame");
  return out;
}

std::string encode_png(const session::Rgb8& image) {
  if (image.empty()) throw Error("PNG", "no image");
  std::string png = lact::encode_png(image.width, image.height, image.pixels.data());
  if (png.empty()) throw Error("PNG", "cannot encode the frame");
  return png;
}

}  // namespace lact::serve
