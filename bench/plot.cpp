#include "bench/plot.h"

#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "system/error.h"
#include "system/file_io.h"

namespace lact::bench {

namespace {

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

// `text` in lines of at most `width` pixels, broken between words (a word wider than that on its own line).
std::vector<std::string> wrapped(const std::string& text, int width) {
  std::vector<std::string> lines;
  std::string line, word;
  auto fits = [&](const std::string& s) { return stb_easy_font_width(const_cast<char*>(s.c_str())) <= width; };
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != ' ') {
      word += text[i];
      continue;
    }
    if (word.empty()) continue;
    if (!line.empty() && !fits(line + " " + word)) lines.push_back(line), line.clear();
    line += (line.empty() ? "" : " ") + word;
    word.clear();
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// Whole decades around the values (at least one).
std::pair<double, double> decades(double lo, double hi) {
  const double d0 = std::floor(std::log10(lo));
  return {d0, std::max(d0 + 1, std::ceil(std::log10(hi)))};
}

void draw_series(Canvas& canvas, const PlotSeries& s, const std::function<double(double)>& px,
                 const std::function<double(double)>& py) {
  for (size_t i = 0; i + 1 < s.points.size(); ++i)
    canvas.line(px(s.points[i].x), py(s.points[i].y), px(s.points[i + 1].x), py(s.points[i + 1].y), s.colour, 2);
  for (const PlotPoint& p : s.points) {
    for (int d = -3; d <= 3; ++d) canvas.line(px(p.x) - 3, py(p.y) + d, px(p.x) + 3, py(p.y) + d, s.colour);
    if (p.low > 0 && p.high > p.low) {  // the error bar: low to high, with caps
      canvas.line(px(p.x), py(p.low), px(p.x), py(p.high), s.colour);
      canvas.line(px(p.x) - 5, py(p.low), px(p.x) + 5, py(p.low), s.colour);
      canvas.line(px(p.x) - 5, py(p.high), px(p.x) + 5, py(p.high), s.colour);
    }
  }
}

void draw_panel(Canvas& canvas, int origin, int band, const PlotPanel& panel) {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const PlotSeries& s : panel.series)
    for (const PlotPoint& p : s.points)
      if (p.x > 0 && p.y > 0) {
        const double lo = p.low > 0 ? std::min(p.low, p.y) : p.y, hi = std::max(p.high, p.y);
        xmin = std::min(xmin, p.x), xmax = std::max(xmax, p.x), ymin = std::min(ymin, lo), ymax = std::max(ymax, hi);
      }
  if (xmax <= 0) return;
  const auto [lx0, lx1] = decades(xmin, xmax);
  const auto [ly0, ly1] = decades(ymin, ymax);
  const int left = origin + kPlotLeft, right = origin + kPlotPanelWidth - kPlotRight, top = band + kPlotTop,
            bottom = band + kPlotPanelHeight - kPlotBottom;
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
  canvas.text(left, band + 14, panel.title);
  canvas.text((left + right) / 2 - 3 * static_cast<int>(panel.x_label.size()), band + kPlotPanelHeight - 28,
              panel.x_label);
  canvas.text(origin + 6, top - 14, panel.y_label);
  int legend_y = top + 8;
  for (const PlotSeries& s : panel.series) {
    draw_series(canvas, s, px, py);
    canvas.line(left + 10, legend_y + 3, left + 30, legend_y + 3, s.colour, 3);
    canvas.text(left + 36, legend_y, s.label);
    legend_y += 14;
  }
}

}  // namespace

void write_loglog_png(const std::string& path, const PlotFigure& figure) {
  const int width = kPlotPanelWidth * static_cast<int>(std::max<size_t>(1, figure.panels.size()));
  std::vector<std::string> title;
  for (const std::string& line : figure.title)
    for (const std::string& part : wrapped(line, width - 2 * kPlotTitleMargin)) title.push_back(part);
  const int band = title.empty() ? 0 : kPlotTitleMargin * 2 + kPlotTitleLine * static_cast<int>(title.size());
  Canvas canvas(width, band + kPlotPanelHeight);
  for (size_t i = 0; i < title.size(); ++i)
    canvas.text(kPlotTitleMargin, kPlotTitleMargin + kPlotTitleLine * static_cast<int>(i), title[i]);
  for (size_t i = 0; i < figure.panels.size(); ++i)
    draw_panel(canvas, static_cast<int>(i) * kPlotPanelWidth, band, figure.panels[i]);
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, canvas.width, canvas.height, 3, canvas.rgb.data(), canvas.width * 3))
    throw Error(path, "cannot encode PNG");
  write_file_atomically(path, png);
}

}  // namespace lact::bench
