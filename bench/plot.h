// A small log-log line plot written as PNG (for `lact bench --plot`): a title over the panels, axes with decade
// ticks, labels (stb_easy_font), one polyline with markers per series and an error bar (low to high) per point.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace lact::bench {

struct PlotPoint {
  double x = 0, y = 0;       // both > 0
  double low = 0, high = 0;  // the error bar, low <= y <= high (low == high: none drawn)
};

struct PlotSeries {
  std::string label;
  std::array<unsigned char, 3> colour;
  std::vector<PlotPoint> points;
};

struct PlotPanel {
  std::string title, x_label, y_label;
  std::vector<PlotSeries> series;
};

// What the whole image shows: title lines over the panels (the run's settings; each wrapped between words to the
// image's width), then the panels side by side.
struct PlotFigure {
  std::vector<std::string> title;
  std::vector<PlotPanel> panels;
};

// The layout in pixels: each panel is kPlotPanelWidth wide, below a band of kPlotTitleLine per (wrapped) title
// line and kPlotTitleMargin above and below them; its
// axes span kPlotLeft .. width - kPlotRight across and kPlotTop .. kPlotPanelHeight - kPlotBottom down (within
// the panel), whole decades around the data (the error bars included).
constexpr int kPlotPanelWidth = 560, kPlotPanelHeight = 420, kPlotTitleLine = 14, kPlotTitleMargin = 8;
constexpr int kPlotLeft = 70, kPlotRight = 20, kPlotTop = 40, kPlotBottom = 60;

void write_loglog_png(const std::string& path, const PlotFigure& figure);

}  // namespace lact::bench
