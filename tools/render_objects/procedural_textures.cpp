// Seeded procedural textures. All patterns except glyphs tile, so they wrap seamlessly on spheres and tori.
#include <algorithm>
#include <cmath>
#include <vector>

#include "procedural.h"

namespace ro {

namespace {

struct Colour {
  float r, g, b;  // sRGB in [0, 1]
};

Colour hsv(float h, float s, float v) {
  h = h - std::floor(h);
  const float c = v * s, x = c * (1 - std::fabs(std::fmod(h * 6.0f, 2.0f) - 1)), m = v - c;
  const int sector = std::min(5, static_cast<int>(h * 6.0f));
  const float tab[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
  return {tab[sector][0] + m, tab[sector][1] + m, tab[sector][2] + m};
}

Colour random_colour(Rng& rng) {
  // Mostly saturated colours, some pastel, some near-grey, across the value range.
  const float h = rng.uniformf(0, 1);
  const float s = rng.chance(0.2) ? rng.uniformf(0.0f, 0.2f) : rng.uniformf(0.35f, 1.0f);
  const float v = rng.uniformf(0.25f, 1.0f);
  return hsv(h, s, v);
}

// A palette of n colours with the first two clearly different in value or hue.
std::vector<Colour> palette(Rng& rng, int n) {
  std::vector<Colour> p;
  p.push_back(random_colour(rng));
  while (static_cast<int>(p.size()) < n) {
    Colour c = random_colour(rng);
    const Colour& a = p.back();
    const float d = std::fabs(c.r - a.r) + std::fabs(c.g - a.g) + std::fabs(c.b - a.b);
    if (d < 0.5f) c = {1.0f - c.r * 0.8f, 1.0f - c.g * 0.8f, 1.0f - c.b * 0.8f};
    p.push_back(c);
  }
  return p;
}

Colour lerp(const Colour& a, const Colour& b, float t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

uint32_t hash3(uint32_t x, uint32_t y, uint32_t s) {
  uint32_t h = x * 0x8DA6B343u ^ y * 0xD8163841u ^ s * 0xCB1AB31Fu;
  h ^= h >> 16, h *= 0x7FEB352Du, h ^= h >> 15, h *= 0x846CA68Bu, h ^= h >> 16;
  return h;
}

float hash01(int x, int y, uint32_t s) {
  return static_cast<float>(hash3(static_cast<uint32_t>(x), static_cast<uint32_t>(y), s) >> 8) * (1.0f / 16777216.0f);
}

// Value noise with period `period` lattice cells across [0, 1) (so it tiles), smoothstep-interpolated.
float value_noise(float u, float v, int period, uint32_t seed) {
  const float x = u * period, y = v * period;
  const float fx = std::floor(x), fy = std::floor(y);
  const int ix = static_cast<int>(fx), iy = static_cast<int>(fy);
  float tx = x - fx, ty = y - fy;
  tx = tx * tx * (3 - 2 * tx), ty = ty * ty * (3 - 2 * ty);
  auto at = [&](int i, int j) {
    return hash01(((i % period) + period) % period, ((j % period) + period) % period, seed);
  };
  const float a = at(ix, iy), b = at(ix + 1, iy), c = at(ix, iy + 1), d = at(ix + 1, iy + 1);
  return (a + (b - a) * tx) + ((c + (d - c) * tx) - (a + (b - a) * tx)) * ty;
}

class Canvas {
 public:
  explicit Canvas(int size) : size_(size), px_(static_cast<size_t>(size) * size * 4, 255) {}
  int size() const { return size_; }
  void set(int x, int y, const Colour& c) {
    uint8_t* p = &px_[(static_cast<size_t>(y) * size_ + x) * 4];
    p[0] = to_byte(c.r), p[1] = to_byte(c.g), p[2] = to_byte(c.b), p[3] = 255;
  }
  // Fills every texel from f(u, v) evaluated at texel centres.
  template <class F>
  void fill(F f) {
    for (int y = 0; y < size_; ++y)
      for (int x = 0; x < size_; ++x) set(x, y, f((x + 0.5f) / size_, (y + 0.5f) / size_));
  }
  std::shared_ptr<const Texture> texture() { return std::make_shared<const Texture>(size_, size_, std::move(px_)); }

 private:
  static uint8_t to_byte(float v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); }
  int size_;
  std::vector<uint8_t> px_;
};

void stripes(Canvas& cv, Rng& rng) {
  int a = rng.integer(0, 6), b = rng.integer(0, 6);
  if (a == 0 && b == 0) a = rng.integer(1, 6);
  const int bands = rng.integer(2, 3);
  const std::vector<Colour> pal = palette(rng, bands);
  std::vector<float> edges;  // cumulative band widths in [0, 1]
  float total = 0;
  for (int i = 0; i < bands; ++i) edges.push_back(total += rng.uniformf(0.5f, 1.5f));
  for (float& e : edges) e /= total;
  const float wobble = rng.chance(0.3) ? rng.uniformf(0.02f, 0.08f) : 0.0f;
  const int wob_freq = rng.integer(1, 4);
  cv.fill([&](float u, float v) {
    float t = a * u + b * v + wobble * std::sin(6.2831853f * wob_freq * (b * u - a * v));
    t -= std::floor(t);
    int k = 0;
    while (k + 1 < bands && t > edges[k]) ++k;
    return pal[k];
  });
}

void checkers(Canvas& cv, Rng& rng) {
  const int nu = rng.integer(2, 12), nv = rng.chance(0.6) ? nu : rng.integer(2, 12);
  const std::vector<Colour> pal = palette(rng, 2);
  cv.fill([&](float u, float v) {
    const int c = static_cast<int>(std::floor(u * nu)) + static_cast<int>(std::floor(v * nv));
    return pal[c & 1];
  });
}

void noise(Canvas& cv, Rng& rng) {
  const int period = rng.integer(2, 8);
  const auto seed = static_cast<uint32_t>(rng.next());
  const std::vector<Colour> pal = palette(rng, 3);
  const bool banded = rng.chance(0.35);  // hard-edged "camouflage" levels instead of a smooth ramp
  cv.fill([&](float u, float v) {
    float n = 0, amp = 0.5f, norm = 0;
    for (int o = 0; o < 4; ++o) {
      n += amp * value_noise(u, v, period << o, seed + 101u * o);
      norm += amp;
      amp *= 0.5f;
    }
    n /= norm;
    if (banded) return n < 0.45f ? pal[0] : (n < 0.55f ? pal[1] : pal[2]);
    const float t = std::clamp((n - 0.25f) * 2.0f, 0.0f, 1.0f);
    return t < 0.5f ? lerp(pal[0], pal[1], t * 2) : lerp(pal[1], pal[2], t * 2 - 1);
  });
}

void dots(Canvas& cv, Rng& rng) {
  const int n = rng.integer(3, 12);
  const float radius = rng.uniformf(0.15f, 0.4f), jitter = rng.uniformf(0.0f, 0.5f - radius);
  const auto seed = static_cast<uint32_t>(rng.next());
  const std::vector<Colour> pal = palette(rng, 3);
  cv.fill([&](float u, float v) {
    const float x = u * n, y = v * n;
    const int cx = static_cast<int>(std::floor(x)), cy = static_cast<int>(std::floor(y));
    // The dot of this cell (its centre stays far enough inside the cell that neighbours need no check).
    const float ox = 0.5f + jitter * (2 * hash01(cx % n, cy % n, seed) - 1);
    const float oy = 0.5f + jitter * (2 * hash01(cx % n, cy % n, seed + 7) - 1);
    const float dx = x - cx - ox, dy = y - cy - oy;
    if (dx * dx + dy * dy > radius * radius) return pal[0];
    return hash01(cx % n, cy % n, seed + 13) < 0.5f ? pal[1] : pal[2];
  });
}

// Lines of "text": words of random 5x7 glyphs from a random alphabet, drawn in ink on paper.
void glyphs(Canvas& cv, Rng& rng) {
  const int size = cv.size();
  const std::vector<Colour> pal = palette(rng, 2);
  const Colour paper = pal[0], ink = pal[1];
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) cv.set(x, y, paper);
  std::vector<uint64_t> alphabet(static_cast<size_t>(rng.integer(12, 30)));
  for (uint64_t& g : alphabet) {
    g = 0;
    for (int bit = 0; bit < 35; ++bit)
      if (rng.chance(0.45)) g |= 1ull << bit;
  }
  const int dot = rng.integer(1, std::max(1, size / 64));  // texels per glyph dot
  const int cell_w = 6 * dot, line_h = 7 * dot + rng.integer(2, 4) * dot;
  const int margin = rng.integer(1, 4) * dot;
  for (int top = margin; top + 7 * dot <= size - margin; top += line_h) {
    int x = margin + (rng.chance(0.3) ? rng.integer(1, 4) * cell_w : 0);
    while (x + cell_w <= size - margin) {
      const int word = rng.integer(2, 8);
      for (int k = 0; k < word && x + cell_w <= size - margin; ++k, x += cell_w) {
        const uint64_t g = alphabet[static_cast<size_t>(rng.integer(0, static_cast<int>(alphabet.size()) - 1))];
        for (int r = 0; r < 7; ++r)
          for (int c = 0; c < 5; ++c)
            if (g >> (r * 5 + c) & 1)
              for (int yy = 0; yy < dot; ++yy)
                for (int xx = 0; xx < dot; ++xx) cv.set(x + c * dot + xx, top + r * dot + yy, ink);
      }
      x += cell_w * rng.integer(1, 2);  // space between words
      if (rng.chance(0.12)) break;      // ragged line end
    }
  }
}

}  // namespace

const char* pattern_name(Pattern kind) {
  switch (kind) {
    case Pattern::Stripes:
      return "stripes";
    case Pattern::Checkers:
      return "checkers";
    case Pattern::Noise:
      return "noise";
    case Pattern::Dots:
      return "dots";
    case Pattern::Glyphs:
      return "glyphs";
    default:
      return "?";
  }
}

std::shared_ptr<const Texture> make_pattern_texture(Pattern kind, Rng& rng, int size) {
  Canvas cv(size);
  switch (kind) {
    case Pattern::Stripes:
      stripes(cv, rng);
      break;
    case Pattern::Checkers:
      checkers(cv, rng);
      break;
    case Pattern::Noise:
      noise(cv, rng);
      break;
    case Pattern::Dots:
      dots(cv, rng);
      break;
    case Pattern::Glyphs:
      glyphs(cv, rng);
      break;
    default:
      break;
  }
  return cv.texture();
}

}  // namespace ro
