#include "datasets/png_decode.h"

#include <spng.h>

#include <memory>

#include "datasets/image_format.h"
#include "system/error.h"

namespace lact {

namespace {

using SpngContext = std::unique_ptr<spng_ctx, void (*)(spng_ctx*)>;

// Any one chunk up to PNG's own limit (stb, and so lact's write_png, puts a whole image in one IDAT); the
// ancillary chunks libspng keeps (text, ICC profiles, EXIF) up to 32 MiB in all, far beyond any real image.
constexpr size_t kMaxChunkBytes = 0x7FFFFFFF;
constexpr size_t kMaxAncillaryBytes = size_t{32} << 20;

SpngContext new_decoder(const std::string& name) {
  SpngContext ctx(spng_ctx_new(0), spng_ctx_free);
  if (!ctx) throw Error(name, "cannot start the PNG decoder (out of memory)");
  // Critical and ancillary chunks alike: a CRC mismatch is an error (libspng discards bad ancillary ones by default).
  spng_set_crc_action(ctx.get(), SPNG_CRC_ERROR, SPNG_CRC_ERROR);
  spng_set_chunk_limits(ctx.get(), kMaxChunkBytes, kMaxAncillaryBytes);
  return ctx;
}

void check(int status, const std::string& name) {
  if (status != 0) throw Error(name, std::string("cannot decode PNG: ") + spng_strerror(status));
}

}  // namespace

Rgba8Image decode_png(const std::string& name, const uint8_t* data, size_t size) {
  SpngContext ctx = new_decoder(name);
  check(spng_set_png_buffer(ctx.get(), data, size), name);
  spng_ihdr ihdr{};
  check(spng_get_ihdr(ctx.get(), &ihdr), name);
  require_decodable_size(name, ihdr.width, ihdr.height);
  if (ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 16)
    throw Error(name,
                "16-bit greyscale PNG is not supported (PIL, the official loader, clips it to 0..255); "
                "save it as 8-bit");
  size_t bytes = 0;
  check(spng_decoded_image_size(ctx.get(), SPNG_FMT_RGBA8, &bytes), name);
  Rgba8Image image;
  image.width = static_cast<int>(ihdr.width);
  image.height = static_cast<int>(ihdr.height);
  if (bytes != static_cast<size_t>(image.width) * image.height * 4)
    throw Error(name, "cannot decode PNG: unexpected size");
  image.pixels.resize(bytes);
  check(spng_decode_image(ctx.get(), image.pixels.data(), bytes, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS), name);
  // On to IEND: once the zlib stream ends libspng stops reading, so a file cut inside the last IDAT's CRC or
  // missing its end would otherwise pass.
  check(spng_decode_chunks(ctx.get()), name);
  // As stb_image reported it before: an alpha channel in the colour type, or a tRNS chunk of any kind (palette
  // alpha or a grey / RGB key colour); the pixels carry the alpha either way.
  spng_trns trns{};
  image.has_alpha = ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                    ihdr.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA || spng_get_trns(ctx.get(), &trns) == 0;
  return image;
}

bool png_size(FILE* file, int& width, int& height) {
  try {
    SpngContext ctx = new_decoder("");
    spng_ihdr ihdr{};
    if (spng_set_png_file(ctx.get(), file) != 0 || spng_get_ihdr(ctx.get(), &ihdr) != 0) return false;
    width = static_cast<int>(ihdr.width);
    height = static_cast<int>(ihdr.height);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace lact
