// lact bench --plot: the title names the run's settings (config, weights, device, threads, precision) and every
// point carries an error bar from the fastest to the slowest timed run (issue 52). Made-up rows; the bars are
// checked against the samples' own minimum and maximum, and on the PNG's pixels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "bench/bench_files.h"
#include "bench/plot.h"
#include "datasets/image_io.h"

namespace lact::bench {
namespace {

Row timed(const std::string& model, const std::string& precision, int64_t tokens, std::vector<double> encode,
          std::vector<double> render) {
  Row r;
  r.model = model, r.precision = precision, r.views = 2, r.height = r.width = 64, r.tokens = tokens;
  r.device = "CPU, 2 threads, AVX2", r.threads = 2;
  r.encode.values = std::move(encode), r.render.values = std::move(render);
  r.encode_s = r.encode.median(), r.render_fps = 1.0 / r.render.median();
  return r;
}

ModelConfig config_of(int layers, int dim) {
  ModelConfig c;
  c.layers = layers, c.dim = dim;
  return c;
}

std::string title_of(const PlotFigure& f) {
  std::string text;
  for (const std::string& line : f.title) text += line + "\n";
  return text;
}

TEST(BenchPlot, TitleNamesConfigWeightsDeviceThreadsPrecision) {
  BenchOptions o;
  o.config = "lact_l24_d768_ttt2x", o.repeat = 5;  // the rows' own count is stated: 3 timed runs each
  const std::vector<Row> rows = {timed("lact", "fp32", 128, {1, 1.1, 1.2}, {0.1, 0.11, 0.12}),
                                 timed("full", "fp32", 128, {2, 2.1, 2.2}, {0.2, 0.21, 0.22})};
  const std::string title = title_of(plot_figure(o, config_of(24, 768), rows));
  for (const char* part : {"config lact_l24_d768_ttt2x (24 layers, dim 768)", "random weights", "3 timed runs",
                           "device CPU, 2 threads, AVX2", "2 thread(s)", "precision fp32"})
    EXPECT_NE(title.find(part), std::string::npos) << part << " not in:\n" << title;
  o.model = "/some/where/lact_tiny_obj64.safetensors";
  const std::string from_file = title_of(plot_figure(o, config_of(2, 64), rows));
  EXPECT_NE(from_file.find("model lact_tiny_obj64.safetensors (2 layers, dim 64)"), std::string::npos) << from_file;
  EXPECT_NE(from_file.find("LaCT weights from lact_tiny_obj64.safetensors"), std::string::npos) << from_file;
}

TEST(BenchPlot, ErrorBarsSpanEachPointsTimedRuns) {
  BenchOptions o;
  const std::vector<double> encode = {1.3, 0.9, 1.0, 2.5, 1.1}, render = {0.05, 0.04, 0.08, 0.05, 0.06};
  const std::vector<Row> rows = {timed("lact", "fp32", 512, encode, render),
                                 timed("lact", "fp32", 128, {0.5, 0.5}, {0.01, 0.01})};
  const PlotFigure f = plot_figure(o, config_of(1, 64), rows);
  ASSERT_EQ(f.panels.size(), 2u);
  ASSERT_EQ(f.panels[0].series.size(), 1u);
  const PlotPoint e = f.panels[0].series[0].points.at(1), r = f.panels[1].series[0].points.at(1);
  EXPECT_EQ(f.panels[0].series[0].points.at(0).x, 128);  // sorted by tokens
  EXPECT_EQ(e.x, 512);
  EXPECT_DOUBLE_EQ(e.y, 1.1);  // the median of the five
  EXPECT_DOUBLE_EQ(e.low, *std::min_element(encode.begin(), encode.end()));
  EXPECT_DOUBLE_EQ(e.high, *std::max_element(encode.begin(), encode.end()));
  // Render FPS: views per second from seconds per view, the slowest run the bar's bottom.
  EXPECT_DOUBLE_EQ(r.y, 1 / 0.05);
  EXPECT_DOUBLE_EQ(r.low, 1 / 0.08);
  EXPECT_DOUBLE_EQ(r.high, 1 / 0.04);
}

TEST(BenchPlot, PrecisionsAreSeparateSeries) {
  BenchOptions o;
  const std::vector<Row> rows = {timed("lact", "fp32", 128, {1}, {0.1}), timed("full", "fp32", 128, {2}, {0.2}),
                                 timed("lact", "bf16", 128, {0.6}, {0.05}), timed("full", "bf16", 128, {1}, {0.1})};
  const PlotFigure f = plot_figure(o, config_of(1, 64), rows);
  std::vector<std::string> labels;
  for (const PlotSeries& s : f.panels[0].series) labels.push_back(s.label + " " + std::to_string(s.points.size()));
  EXPECT_EQ(labels,
            (std::vector<std::string>{"LaCT fp32 1", "full attention fp32 1", "LaCT bf16 1", "full attention bf16 1"}));
  EXPECT_NE(title_of(f).find("precision fp32, bf16"), std::string::npos) << title_of(f);
}

// The PNG: a title band with text over the panels, and one point's error bar drawn across the whole plot height
// (its low and high on the lowest and highest decade lines).
TEST(BenchPlot, PngHasTitleBandAndErrorBar) {
  PlotSeries s{"LaCT", {200, 30, 30}, {{10, 10, 10, 10}, {100, 10, 1, 100}, {1000, 10, 10, 10}}};
  PlotFigure f{{"a title line", std::string(400, 'w') + " second words"}, {{"p", "x", "y", {s}}}};
  const std::string path = (std::filesystem::temp_directory_path() / "lact_test_bench_plot.png").string();
  write_loglog_png(path, f);
  const Rgba8Image png = read_image(path);
  std::filesystem::remove(path);
  const int band = png.height - kPlotPanelHeight;
  EXPECT_EQ(png.width, kPlotPanelWidth);
  EXPECT_GE(band, 2 * kPlotTitleMargin + 3 * kPlotTitleLine);  // the long line wrapped onto a third line
  auto pixel = [&](int x, int y) { return &png.pixels[(static_cast<size_t>(y) * png.width + x) * 4]; };
  int dark = 0;
  for (int y = 0; y < band; ++y)
    for (int x = 0; x < png.width; ++x) dark += pixel(x, y)[0] < 100;
  EXPECT_GT(dark, 100) << "no title text";
  // x decades 10..1000: 100 is halfway; y decades 1..100: the bar from the bottom axis to the top.
  const int column = kPlotLeft + (kPlotPanelWidth - kPlotRight - kPlotLeft) / 2;
  const int top = band + kPlotTop, bottom = band + kPlotPanelHeight - kPlotBottom;
  int coloured = 0;
  for (int y = top; y <= bottom; ++y) coloured += pixel(column, y)[0] == 200 && pixel(column, y)[1] == 30;
  EXPECT_GE(coloured, bottom - top - 1) << "the error bar does not span the plot";
  // The point without a bar at 1000 draws only its marker in its column.
  const int last = kPlotPanelWidth - kPlotRight;
  int marker = 0;
  for (int y = top + 2; y <= bottom - 2; ++y) marker += pixel(last, y)[0] == 200 && pixel(last, y)[1] == 30;
  EXPECT_LE(marker, 8);
}

}  // namespace
}  // namespace lact::bench
