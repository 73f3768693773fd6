#include "import/image_orientation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lact {

namespace {

// Reads TIFF integers in the block's byte order, refusing any read past its end.
struct TiffReader {
  std::string_view data;
  bool little = true;
  bool u16(size_t at, uint32_t& v) const {
    if (at + 2 > data.size()) return false;
    const auto b0 = static_cast<uint8_t>(data[at]), b1 = static_cast<uint8_t>(data[at + 1]);
    v = little ? (b0 | b1 << 8) : (b0 << 8 | b1);
    return true;
  }
  bool u32(size_t at, uint32_t& v) const {
    uint32_t lo = 0, hi = 0;
    if (!u16(at, lo) || !u16(at + 2, hi)) return false;
    v = little ? (lo | hi << 16) : (lo << 16 | hi);
    return true;
  }
};

// A reader of a TIFF block ("II*\0" or "MM\0*") in its byte order; nullopt for anything else.
std::optional<TiffReader> tiff_reader(std::string_view tiff) {
  if (tiff.size() < 8 || !(tiff.substr(0, 2) == "II" || tiff.substr(0, 2) == "MM")) return std::nullopt;
  return TiffReader{tiff, tiff[0] == 'I'};
}

// Where IFD0's entry of tag `wanted` and type `wanted_type` starts; nullopt when there is none or the block ends
// before it.
std::optional<size_t> ifd0_entry(const TiffReader& r, uint32_t wanted, uint32_t wanted_type) {
  uint32_t ifd = 0, count = 0;
  if (!r.u32(4, ifd) || !r.u16(ifd, count)) return std::nullopt;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t entry = ifd + 2 + size_t{12} * i;
    uint32_t tag = 0, type = 0;
    if (!r.u16(entry, tag) || !r.u16(entry + 2, type)) return std::nullopt;
    if (tag == wanted && type == wanted_type) return entry;
  }
  return std::nullopt;
}

// The orientation tag (0x0112, SHORT) of IFD0 in a TIFF block, or 1.
int tiff_orientation(std::string_view tiff) {
  const std::optional<TiffReader> r = tiff_reader(tiff);
  const std::optional<size_t> entry = r ? ifd0_entry(*r, 0x0112, 3) : std::nullopt;
  uint32_t value = 0;
  if (!entry || !r->u16(*entry + 8, value)) return 1;
  return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
}

// An ASCII tag (type 2) of IFD0 of a TIFF block, printable characters only, at most 64; "" when absent.
std::string tiff_ascii(std::string_view tiff, uint32_t wanted) {
  const std::optional<TiffReader> r = tiff_reader(tiff);
  const std::optional<size_t> entry = r ? ifd0_entry(*r, wanted, 2) : std::nullopt;
  uint32_t length = 0, offset = 0;
  if (!entry || !r->u32(*entry + 4, length)) return "";
  if (length > 4 && !r->u32(*entry + 8, offset)) return "";
  const size_t at = length > 4 ? offset : *entry + 8;
  if (at >= tiff.size() || length > tiff.size() - at) return "";
  std::string text;
  for (char c : tiff.substr(at, std::min<uint32_t>(length, 64)))
    if (c >= 0x20 && c < 0x7f) text += c;
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// The TIFF block of a JPEG's APP1 "Exif\0\0" segment, or "".
std::string_view jpeg_exif_block(std::string_view jpeg) {
  if (jpeg.size() < 4 || static_cast<uint8_t>(jpeg[0]) != 0xFF || static_cast<uint8_t>(jpeg[1]) != 0xD8) return {};
  size_t at = 2;
  // Markers up to the first scan: APP1 "Exif\0\0" holds the TIFF block.
  while (at + 4 <= jpeg.size() && static_cast<uint8_t>(jpeg[at]) == 0xFF) {
    const auto marker = static_cast<uint8_t>(jpeg[at + 1]);
    if (marker == 0xDA || marker == 0xD9) break;  // start of scan / end of image: no EXIF before the pixels
    const size_t length = static_cast<uint8_t>(jpeg[at + 2]) << 8 | static_cast<uint8_t>(jpeg[at + 3]);
    if (length < 2 || at + 2 + length > jpeg.size()) break;
    const std::string_view body = jpeg.substr(at + 4, length - 2);
    if (marker == 0xE1 && body.size() > 6 && body.substr(0, 6) == std::string_view("Exif\0\0", 6))
      return body.substr(6);
    at += 2 + length;
  }
  return {};
}

}  // namespace

int jpeg_exif_orientation(std::string_view jpeg) {
  const std::string_view tiff = jpeg_exif_block(jpeg);
  return tiff.empty() ? 1 : tiff_orientation(tiff);
}

std::string jpeg_exif_camera(std::string_view jpeg) {
  const std::string_view tiff = jpeg_exif_block(jpeg);
  const std::string make = tiff_ascii(tiff, 0x010F), model = tiff_ascii(tiff, 0x0110);
  // Models often repeat the make ("Canon" "Canon EOS 80D"): said once.
  if (!make.empty() && model.rfind(make, 0) == 0) return model;
  return make.empty() || model.empty() ? make + model : make + " " + model;
}

Rgba8Image apply_exif_orientation(const Rgba8Image& image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const int w = image.width, h = image.height;
  const bool swap = orientation >= 5;
  Rgba8Image out = image;
  out.width = swap ? h : w, out.height = swap ? w : h;
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;  // the stored pixel shown at (x, y)
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;
        case 3:
          sx = w - 1 - x, sy = h - 1 - y;
          break;
        case 4:
          sy = h - 1 - y;
          break;
        case 5:
          sx = y, sy = x;
          break;
        case 6:
          sx = y, sy = h - 1 - x;
          break;
        case 7:
          sx = w - 1 - y, sy = h - 1 - x;
          break;
        default:
          sx = w - 1 - y, sy = x;
          break;  // 8
      }
      const size_t from = (static_cast<size_t>(sy) * w + sx) * 4, to = (static_cast<size_t>(y) * out.width + x) * 4;
      std::copy_n(image.pixels.begin() + from, 4, out.pixels.begin() + to);
    }
  return out;
}

namespace {

// One axis of an area average: for output sample i, the source samples it covers and their weights.
struct AreaWeights {
  std::vector<int> first;
  std::vector<std::vector<float>> weights;
};

AreaWeights area_weights(int from, int to) {
  AreaWeights a;
  const double step = static_cast<double>(from) / to;
  for (int i = 0; i < to; ++i) {
    const double begin = i * step, end = std::min<double>(from, (i + 1) * step);
    const int first = static_cast<int>(std::floor(begin));
    std::vector<float> w;
    for (int s = first; s < end; ++s)
      w.push_back(static_cast<float>((std::min<double>(s + 1, end) - std::max<double>(s, begin)) / step));
    a.first.push_back(first);
    a.weights.push_back(std::move(w));
  }
  return a;
}

}  // namespace

Rgba8Image shrink_to_long_side(const Rgba8Image& image, int max_side) {
  const int long_side = std::max(image.width, image.height);
  if (max_side <= 0 || long_side <= max_side) return image;
  const double s = static_cast<double>(max_side) / long_side;
  const int w = std::max(1, static_cast<int>(std::lround(image.width * s)));
  const int h = std::max(1, static_cast<int>(std::lround(image.height * s)));
  const AreaWeights ax = area_weights(image.width, w), ay = area_weights(image.height, h);
  std::vector<float> rows(static_cast<size_t>(image.height) * w * 4, 0.0f);  // shrunk along x
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < w; ++x)
      for (size_t k = 0; k < ax.weights[x].size(); ++k)
        for (int c = 0; c < 4; ++c)
          rows[(static_cast<size_t>(y) * w + x) * 4 + c] +=
              ax.weights[x][k] * image.pixels[(static_cast<size_t>(y) * image.width + ax.first[x] + k) * 4 + c];
  Rgba8Image out;
  out.width = w, out.height = h, out.has_alpha = image.has_alpha;
  out.pixels.resize(static_cast<size_t>(w) * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c) {
        float sum = 0;
        for (size_t k = 0; k < ay.weights[y].size(); ++k)
          sum += ay.weights[y][k] * rows[((ay.first[y] + k) * w + x) * 4 + c];
        out.pixels[(static_cast<size_t>(y) * w + x) * 4 + c] =
            static_cast<uint8_t>(std::clamp(std::lround(sum), 0L, 255L));
      }
  return out;
}

}  // namespace lact
