// A small log-log line plot written as PNG (for `lact bench --plot`): axes with decade ticks, labels
// (stb_easy_font), one polyline with markers per series.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace lact::bench {

struct PlotSeries {
  std::string label;
  std::array<unsigned char, 3> colour;
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0
};

struct PlotPanel {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
};

// Panels side by side in one image.
void write_loglog_png(const std::string& path, const std::vector<PlotPanel>& panels);

}  // namespace lact::bench
