#include "bench/plot.h"

#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/file_io.h"

namespace lact::bench {

namespace {

constexpr int kPanelWidth = 560, kHeight = 420, kLeft = 70, kRight = 20, kTop = 40, kBottom = 60;

struct Canvas {
  int width, height;
  std::vector<unsigned char> rgb;
  Canvas(int w, int h) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3, 255) {}
  void dot(int x, int y, std::array<unsigned char, 3> c) {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    unsigned char* p = rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
  }
  void line(double x0, double y0, double x1, double y1, std::array<unsigned char, 3> c, int thick = 1) {
    const int steps = static_cast<int>(std::max(std::abs(x1 - x0), std::abs(y1 - y0))) + 1;
    for (int i = 0; i <= steps; ++i) {
      const double t = static_cast<double>(i) / steps;
      const int x = static_cast<int>(std::lround(x0 + t * (x1 - x0))),
                y = static_cast<int>(std::lround(y0 + t * (y1 - y0)));
      for (int dx = 0; dx < thick; ++dx)
        for (int dy = 0; dy < thick; ++dy) dot(x + dx - thick / 2, y + dy - thick / 2, c);
    }
  }
  void text(int x, int y, const std::string& s, std::array<unsigned char, 3> c = {0, 0, 0}) {
    static char buffer[99999];
    char* str = const_cast<char*>(s.c_str());
    const int quads = stb_easy_font_print(0, 0, str, nullptr, buffer, sizeof(buffer));
    const float* v = reinterpret_cast<const float*>(buffer);  // 4 vertices (x, y, z, colour) per quad
    for (int q = 0; q < quads; ++q) {
      const float* quad = v + q * 16;
      const int x0 = static_cast<int>(quad[0]), y0 = static_cast<int>(quad[1]);
      const int x1 = static_cast<int>(quad[8]), y1 = static_cast<int>(quad[9]);
      for (int yy = y0; yy < y1; ++yy)
        for (int xx = x0; xx < x1; ++xx) dot(x + xx, y + yy, c);
    }
  }
};

void draw_panel(Canvas& canvas, int origin, const PlotPanel& panel) {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const PlotSeries& s : panel.series)
    for (auto [x, y] : s.points)
      if (x > 0 && y > 0)
        xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  if (xmax <= 0) return;
  // Whole decades around the data.
  const double lx0 = std::floor(std::log10(xmin)), lx1 = std::max(lx0 + 1, std::ceil(std::log10(xmax)));
  const double ly0 = std::floor(std::log10(ymin)), ly1 = std::max(ly0 + 1, std::ceil(std::log10(ymax)));
  const int left = origin + kLeft, right = origin + kPanelWidth - kRight, top = kTop, bottom = kHeight - kBottom;
  auto px = [&](double x) { return left + (std::log10(x) - lx0) / (lx1 - lx0) * (right - left); };
  auto py = [&](double y) { return bottom - (std::log10(y) - ly0) / (ly1 - ly0) * (bottom - top); };
  const std::array<unsigned char, 3> grid{225, 225, 225}, black{0, 0, 0};
  for (double d = lx0; d <= lx1; ++d) {
    canvas.line(px(std::pow(10, d)), top, px(std::pow(10, d)), bottom, grid);
    char label[32];
    std::snprintf(label, sizeof(label), "%g", std::pow(10, d));
    canvas.text(static_cast<int>(px(std::pow(10, d))) - 10, bottom + 8, label);
  }
  for (double d = ly0; d <= ly1; ++d) {
    canvas.line(left, py(std::pow(10, d)), right, py(std::pow(10, d)), grid);
    char label[32];
    std::snprintf(label, sizeof(label), "%g", std::pow(10, d));
    canvas.text(left - 8 - 6 * static_cast<int>(std::string(label).size()), static_cast<int>(py(std::pow(10, d))) - 4,
                label);
  }
  canvas.line(left, bottom, right, bottom, black);
  canvas.line(left, top, left, bottom, black);
  canvas.text(left, 14, panel.title);
  canvas.text((left + right) / 2 - 3 * static_cast<int>(panel.x_label.size()), kHeight - 28, panel.x_label);
  canvas.text(origin + 6, top - 14, panel.y_label);
  int legend_y = top + 8;
  for (const PlotSeries& s : panel.series) {
    for (size_t i = 0; i + 1 < s.points.size(); ++i)
      canvas.line(px(s.points[i].first), py(s.points[i].second), px(s.points[i + 1].first), py(s.points[i + 1].second),
                  s.colour, 2);
    for (auto [x, y] : s.points)
      for (int d = -3; d <= 3; ++d) canvas.line(px(x) - 3, py(y) + d, px(x) + 3, py(y) + d, s.colour);
    canvas.line(left + 10, legend_y + 3, left + 30, legend_y + 3, s.colour, 3);
    canvas.text(left + 36, legend_y, s.label);
    legend_y += 14;
  }
}

}  // namespace

void write_loglog_png(const std::string& path, const std::vector<PlotPanel>& panels) {
  Canvas canvas(kPanelWidth * static_cast<int>(std::max<size_t>(1, panels.size())), kHeight);
  for (size_t i = 0; i < panels.size(); ++i) draw_panel(canvas, static_cast<int>(i) * kPanelWidth, panels[i]);
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, canvas.width, canvas.height, 3, canvas.rgb.data(), canvas.width * 3))
    throw Error(path, "cannot encode PNG");
  write_file_atomically(path, png);
}

}  // namespace lact::bench
