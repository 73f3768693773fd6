#include "core/error_scale_bar.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

namespace lact {
namespace {

// Digits and the decimal point in a 3x5 pixel font (one row per string, '#' lit): enough for "0", "0.125",
// "0.25" under a 64-pixel-wide map, with no font file to ship.
const std::array<std::array<const char*, 5>, 11> kGlyphs = {{
    {"###", "#.#", "#.#", "#.#", "###"},
    {".#.", "##.", ".#.", ".#.", "###"},
    {"###", "..#", "###", "#..", "###"},
    {"###", "..#", "###", "..#", "###"},
    {"#.#", "#.#", "###", "..#", "..#"},
    {"###", "#..", "###", "..#", "###"},
    {"###", "#..", "###", "#.#", "###"},
    {"###", "..#", "..#", "..#", "..#"},
    {"###", "#.#", "###", "#.#", "###"},
    {"###", "#.#", "###", "..#", "###"},
    {"...", "...", "...", "...", ".#."},
}};
constexpr int kGlyphWidth = 4;  // 3 columns and a space
constexpr int kBarTop = 2, kBarRows = 6, kTickRows = 2, kTextTop = kBarTop + kBarRows + kTickRows + 1;

void set_pixel(Image& image, int x, int y, float r, float g, float b) {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
  float* p = &image.rgb[(static_cast<size_t>(y) * image.width + x) * 3];
  p[0] = r, p[1] = g, p[2] = b;
}

// The heat map's colouring of t in [0, 1] (black -> red -> yellow -> white), as error_heat_map applies it.
void set_heat(Image& image, int x, int y, float t) {
  const float s = std::clamp(t, 0.0f, 1.0f) * 3.0f;
  set_pixel(image, x, y, std::min(s, 1.0f), std::clamp(s - 1.0f, 0.0f, 1.0f), std::clamp(s - 2.0f, 0.0f, 1.0f));
}

int text_width(const std::string& text) { return static_cast<int>(text.size()) * kGlyphWidth - 1; }

void draw_text(Image& image, const std::string& text, int left, int top) {
  for (size_t c = 0; c < text.size(); ++c) {
    const int glyph = text[c] == '.' ? 10 : text[c] - '0';
    for (int row = 0; row < 5; ++row)
      for (int col = 0; col < 3; ++col)
        if (kGlyphs[glyph][row][col] == '#')
          set_pixel(image, left + static_cast<int>(c) * kGlyphWidth + col, top + row, 0.0f, 0.0f, 0.0f);
  }
}

std::string label(float value) {
  char text[16];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// A tick above a label at column x, and the label centred on it but kept inside the image.
void draw_tick_and_label(Image& image, int x, const std::string& text) {
  for (int row = 0; row < kTickRows; ++row) set_pixel(image, x, kBarTop + kBarRows + row, 0.0f, 0.0f, 0.0f);
  const int left = std::clamp(x - text_width(text) / 2, 0, std::max(0, image.width - text_width(text)));
  draw_text(image, text, left, kTextTop);
}

}  // namespace

Image with_error_scale_bar(const Image& heat_map, float gain) {
  Image bar{heat_map.width, kErrorScaleBarRows,
            std::vector<float>(static_cast<size_t>(heat_map.width) * 3 * kErrorScaleBarRows, 1.0f)};
  const int last = std::max(1, bar.width - 1);
  for (int x = 0; x < bar.width; ++x)
    for (int row = 0; row < kBarRows; ++row) set_heat(bar, x, kBarTop + row, static_cast<float>(x) / last);
  const float saturation = 1.0f / gain;  // the mean absolute error that reaches white
  draw_tick_and_label(bar, 0, "0");
  if (bar.width >= 48) draw_tick_and_label(bar, last / 2, label(saturation / 2));
  draw_tick_and_label(bar, last, label(saturation));
  Image out{heat_map.width, heat_map.height + kErrorScaleBarRows, heat_map.rgb};
  out.rgb.insert(out.rgb.end(), bar.rgb.begin(), bar.rgb.end());
  return out;
}

}  // namespace lact
