#include "texture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace ro {

namespace {

struct SrgbTables {
  std::array<float, 256> to_linear{};
  std::array<uint8_t, 4097> to_srgb{};
  SrgbTables() {
    for (int i = 0; i < 256; ++i) {
      const double c = i / 255.0;
      to_linear[i] = static_cast<float>(c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4));
    }
    for (int i = 0; i <= 4096; ++i) {
      const double l = i / 4096.0;
      const double s = l <= 0.0031308 ? l * 12.92 : 1.055 * std::pow(l, 1.0 / 2.4) - 0.055;
      to_srgb[i] = static_cast<uint8_t>(std::lround(std::clamp(s, 0.0, 1.0) * 255.0));
    }
  }
};

const SrgbTables& tables() {
  static const SrgbTables t;
  return t;
}

// Maps an integer texel coordinate into [0, n).
inline int wrap_index(int i, int n, Wrap mode) {
  switch (mode) {
    case Wrap::Repeat: {
      const int r = i % n;
      return r < 0 ? r + n : r;
    }
    case Wrap::Clamp:
      return i < 0 ? 0 : (i >= n ? n - 1 : i);
    case Wrap::Mirror: {
      const int period = 2 * n;
      int r = i % period;
      if (r < 0) r += period;
      return r < n ? r : period - 1 - r;
    }
  }
  return 0;
}

}  // namespace

float srgb_to_linear(uint8_t v) { return tables().to_linear[v]; }

uint8_t linear_to_srgb(float v) {
  const float c = v <= 0.0f ? 0.0f : (v >= 1.0f ? 1.0f : v);
  // Nearest entry of a 4097-entry table: at most ~0.8 of a byte step off, near black.
  return tables().to_srgb[static_cast<int>(c * 4096.0f + 0.5f)];
}

Texture::Texture(int width, int height, std::vector<uint8_t> rgba, int max_size) {
  if (width <= 0 || height <= 0 || rgba.size() != static_cast<size_t>(width) * height * 4)
    throw std::runtime_error("texture: bad size");
  levels_.push_back({width, height, std::move(rgba)});
  // Each level is a 2x2 box filter of the previous one (odd sizes round down, clamping the last row/column).
  while (levels_.back().w > 1 || levels_.back().h > 1) {
    const Level& src = levels_.back();
    Level dst;
    dst.w = std::max(1, src.w / 2), dst.h = std::max(1, src.h / 2);
    dst.rgba.resize(static_cast<size_t>(dst.w) * dst.h * 4);
    for (int y = 0; y < dst.h; ++y)
      for (int x = 0; x < dst.w; ++x) {
        const int x0 = std::min(2 * x, src.w - 1), x1 = std::min(2 * x + 1, src.w - 1);
        const int y0 = std::min(2 * y, src.h - 1), y1 = std::min(2 * y + 1, src.h - 1);
        for (int c = 0; c < 4; ++c) {
          const int s = src.rgba[(static_cast<size_t>(y0) * src.w + x0) * 4 + c] +
                        src.rgba[(static_cast<size_t>(y0) * src.w + x1) * 4 + c] +
                        src.rgba[(static_cast<size_t>(y1) * src.w + x0) * 4 + c] +
                        src.rgba[(static_cast<size_t>(y1) * src.w + x1) * 4 + c];
          dst.rgba[(static_cast<size_t>(y) * dst.w + x) * 4 + c] = static_cast<uint8_t>((s + 2) / 4);
        }
      }
    levels_.push_back(std::move(dst));
  }
  // Drop the levels above max_size.
  size_t first = 0;
  while (first + 1 < levels_.size() && (levels_[first].w > max_size || levels_[first].h > max_size)) ++first;
  if (first > 0) levels_.erase(levels_.begin(), levels_.begin() + static_cast<std::ptrdiff_t>(first));
}

Rgba Texture::sample_level(float u, float v, int level, Wrap wrap_s, Wrap wrap_t) const {
  const Level& L = levels_[std::clamp(level, 0, levels() - 1)];
  const float x = u * L.w - 0.5f, y = v * L.h - 0.5f;
  const float fx0 = std::floor(x), fy0 = std::floor(y);
  const float tx = x - fx0, ty = y - fy0;
  // Guard against huge or non-finite UVs before converting to int.
  const float lim = 1e6f;
  const int ix = static_cast<int>(std::clamp(fx0, -lim, lim)), iy = static_cast<int>(std::clamp(fy0, -lim, lim));
  const int xa = wrap_index(ix, L.w, wrap_s), xb = wrap_index(ix + 1, L.w, wrap_s);
  const int ya = wrap_index(iy, L.h, wrap_t), yb = wrap_index(iy + 1, L.h, wrap_t);
  const uint8_t* p00 = &L.rgba[(static_cast<size_t>(ya) * L.w + xa) * 4];
  const uint8_t* p10 = &L.rgba[(static_cast<size_t>(ya) * L.w + xb) * 4];
  const uint8_t* p01 = &L.rgba[(static_cast<size_t>(yb) * L.w + xa) * 4];
  const uint8_t* p11 = &L.rgba[(static_cast<size_t>(yb) * L.w + xb) * 4];
  const float w00 = (1 - tx) * (1 - ty), w10 = tx * (1 - ty), w01 = (1 - tx) * ty, w11 = tx * ty;
  const auto& lin = tables().to_linear;
  Rgba out;
  out.r = w00 * lin[p00[0]] + w10 * lin[p10[0]] + w01 * lin[p01[0]] + w11 * lin[p11[0]];
  out.g = w00 * lin[p00[1]] + w10 * lin[p10[1]] + w01 * lin[p01[1]] + w11 * lin[p11[1]];
  out.b = w00 * lin[p00[2]] + w10 * lin[p10[2]] + w01 * lin[p01[2]] + w11 * lin[p11[2]];
  out.a = (w00 * p00[3] + w10 * p10[3] + w01 * p01[3] + w11 * p11[3]) * (1.0f / 255.0f);
  return out;
}

Rgba Texture::sample(float u, float v, float lod, Wrap wrap_s, Wrap wrap_t) const {
  if (!(lod > 0.0f)) return sample_level(u, v, 0, wrap_s, wrap_t);
  const float max_lod = static_cast<float>(levels() - 1);
  if (lod >= max_lod) return sample_level(u, v, levels() - 1, wrap_s, wrap_t);
  const int l0 = static_cast<int>(lod);
  const float t = lod - static_cast<float>(l0);
  const Rgba a = sample_level(u, v, l0, wrap_s, wrap_t);
  if (t < 1e-3f) return a;
  const Rgba b = sample_level(u, v, l0 + 1, wrap_s, wrap_t);
  return {a.r + t * (b.r - a.r), a.g + t * (b.g - a.g), a.b + t * (b.b - a.b), a.a + t * (b.a - a.a)};
}

}  // namespace ro
