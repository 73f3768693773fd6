#include "datasets/jpeg_decode.h"

// jpeglib.h needs size_t and FILE declared first.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include "core/camera.h"
#include "datasets/image_format.h"
#include "system/error.h"

namespace lact {

namespace {

// A progressive JPEG may hold thousands of tiny scans, each a pass over the whole image: a small file that
// decodes for minutes. Real encoders write about ten; libjpeg-turbo's own fuzzers stop at 500.
constexpr int kMaxScans = 500;

struct ErrorManager {
  jpeg_error_mgr pub;
  jpeg_progress_mgr progress;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

ErrorManager& manager(j_common_ptr cinfo) { return *reinterpret_cast<ErrorManager*>(cinfo->err); }

[[noreturn]] void fail(j_common_ptr cinfo) {
  ErrorManager& m = manager(cinfo);
  m.pub.format_message(cinfo, m.message);
  std::longjmp(m.jump, 1);
}

// Level -1 is a warning. Those about metadata lact ignores are harmless; the rest mean corrupt pixels.
void on_message(j_common_ptr cinfo, int level) {
  const int code = cinfo->err->msg_code;
  if (level == -1 && code != JWRN_JFIF_MAJOR && code != JWRN_BOGUS_ICC) fail(cinfo);
}

void on_progress(j_common_ptr cinfo) {
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->input_scan_number > kMaxScans) {
    std::snprintf(manager(cinfo).message, JMSG_LENGTH_MAX, "more than %d progressive scans", kMaxScans);
    std::longjmp(manager(cinfo).jump, 1);
  }
}

void silence(j_common_ptr) {}

// PIL's cmyk2rgb (libImaging/Convert.c) on libjpeg's CMYK samples. PIL reads every 4-component JPEG as
// inverted ("CMYK;I", the Adobe convention), marker or not, and so does this.
void cmyk_to_rgba(uint8_t* pixels, size_t count) {
  for (size_t i = 0; i < count; ++i, pixels += 4) {
    int c[4];
    for (int k = 0; k < 4; ++k) c[k] = 255 - pixels[k];
    const int nk = 255 - c[3];
    for (int k = 0; k < 3; ++k) {
      const int scaled = c[k] * nk + 128;
      pixels[k] = static_cast<uint8_t>(std::max(0, nk - ((scaled + (scaled >> 8)) >> 8)));
    }
    pixels[3] = 255;
  }
}

struct Header {
  JDIMENSION width = 0, height = 0;
  bool cmyk = false;
};

// Everything libjpeg does, under one setjmp: a libjpeg error or a rejected warning lands back here and the
// function returns false with the message in `errors`. No object with a destructor lives in this frame.
// `image` == nullptr: the header only.
bool run_libjpeg(jpeg_decompress_struct& cinfo, ErrorManager& errors, Header& header, Rgba8Image* image) {
  if (setjmp(errors.jump)) return false;
  jpeg_read_header(&cinfo, TRUE);
  header.width = cinfo.image_width, header.height = cinfo.image_height;
  header.cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  if (!image || header.width == 0 || header.height == 0 || header.width > static_cast<JDIMENSION>(kMaxImageSide) ||
      header.height > static_cast<JDIMENSION>(kMaxImageSide) ||
      static_cast<uint64_t>(header.width) * header.height > static_cast<uint64_t>(kMaxImagePixels))
    return true;  // the caller checks the size (and throws) before anything large is allocated
  cinfo.out_color_space = header.cmyk ? JCS_CMYK : JCS_EXT_RGBA;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_width != header.width || cinfo.output_height != header.height || cinfo.output_components != 4) {
    std::snprintf(errors.message, JMSG_LENGTH_MAX, "unexpected output layout");
    return false;
  }
  image->width = static_cast<int>(header.width), image->height = static_cast<int>(header.height);
  image->pixels.resize(static_cast<size_t>(header.width) * header.height * 4);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image->pixels.data() + static_cast<size_t>(cinfo.output_scanline) * header.width * 4;
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
      std::snprintf(errors.message, JMSG_LENGTH_MAX, "no scanline %u", cinfo.output_scanline);
      return false;
    }
  }
  jpeg_finish_decompress(&cinfo);  // reads to EOI: corruption after the last scanline is reported too
  return true;
}

// Sets up libjpeg with lact's error handling, runs `attach` to attach the input, then run_libjpeg.
template <typename Source>
bool with_libjpeg(Source attach, Header& header, Rgba8Image* image, std::string& message) {
  ErrorManager errors;
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = fail;
  errors.pub.emit_message = on_message;
  errors.pub.output_message = silence;
  errors.progress.progress_monitor = on_progress;
  errors.message[0] = '\0';
  bool ok = false;
  if (!setjmp(errors.jump)) {
    jpeg_create_decompress(&cinfo);
    cinfo.progress = &errors.progress;
    attach(cinfo);
    ok = run_libjpeg(cinfo, errors, header, image);
  }
  jpeg_destroy_decompress(&cinfo);
  message = errors.message;
  return ok;
}

}  // namespace

Rgba8Image decode_jpeg(const std::string& name, const uint8_t* data, size_t size) {
  Header header;
  std::string message;
  auto from_memory = [&](jpeg_decompress_struct& cinfo) {
    jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  };
  Rgba8Image image;
  // Header first (it throws for a size too large before any pixel buffer exists), then the pixels.
  if (!with_libjpeg(from_memory, header, nullptr, message)) throw Error(name, "cannot decode JPEG: " + message);
  require_decodable_size(name, header.width, header.height);
  if (!with_libjpeg(from_memory, header, &image, message)) throw Error(name, "cannot decode JPEG: " + message);
  if (header.cmyk) cmyk_to_rgba(image.pixels.data(), static_cast<size_t>(image.width) * image.height);
  image.has_alpha = false;
  return image;
}

bool jpeg_size(FILE* file, int& width, int& height) {
  Header header;
  std::string message;
  if (!with_libjpeg([&](jpeg_decompress_struct& cinfo) { jpeg_stdio_src(&cinfo, file); }, header, nullptr, message) ||
      header.width == 0 || header.height == 0 || header.width > static_cast<JDIMENSION>(kMaxImageSide) ||
      header.height > static_cast<JDIMENSION>(kMaxImageSide))
    return false;
  width = static_cast<int>(header.width), height = static_cast<int>(header.height);
  return true;
}

}  // namespace lact
