// RGBA8 sRGB textures with a mip chain, sampled trilinearly in linear colour.
#pragma once

#include <cstdint>
#include <vector>

namespace ro {

enum class Wrap { Repeat, Clamp, Mirror };

struct Rgba {
  float r = 1, g = 1, b = 1, a = 1;
};

// sRGB byte -> linear [0,1], and linear [0,1] -> sRGB byte (rounded).
float srgb_to_linear(uint8_t v);
uint8_t linear_to_srgb(float v);

class Texture {
 public:
  // Takes 8-bit RGBA pixels (sRGB colour, linear alpha), shrinks them by halving until both sides are at most
  // max_size, and builds the mip chain down to 1x1.
  Texture(int width, int height, std::vector<uint8_t> rgba, int max_size = 1024);

  int width() const { return levels_[0].w; }
  int height() const { return levels_[0].h; }
  int levels() const { return static_cast<int>(levels_.size()); }

  // Bilinear within the two mip levels around lod (trilinear), in linear colour. lod 0 = full resolution.
  Rgba sample(float u, float v, float lod, Wrap wrap_s, Wrap wrap_t) const;
  // Bilinear at one level.
  Rgba sample_level(float u, float v, int level, Wrap wrap_s, Wrap wrap_t) const;

 private:
  struct Level {
    int w = 0, h = 0;
    std::vector<uint8_t> rgba;
  };
  std::vector<Level> levels_;
};

}  // namespace ro
