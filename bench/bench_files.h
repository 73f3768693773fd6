// `lact bench`'s files: every row as JSON (--json), one row per size with both models as CSV (--csv), and the
// log-log plot of encode time and render FPS against input tokens (--plot). Each is written atomically.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_row.h"
#include "bench/plot.h"
#include "core/config.h"

namespace lact::bench {

// The "lact bench v3" document: the run's settings, `lact`'s config and every row.
void write_json(const std::string& path, const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows);
// LaCT and full attention side by side per precision, views and size, with their ratios (empty where the
// timings spread too wide to trust) and spreads: the text of --csv, and its atomic write.
std::string bench_csv(const std::vector<Row>& rows);
void write_csv(const std::string& path, const std::vector<Row>& rows);
// The plot: one series per model (and precision, when several were timed), in the order they were run, each
// point the median with an error bar from the fastest to the slowest timed run; titled with the config, the
// weights (random or --model's), the device, threads and precision.
PlotFigure plot_figure(const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows);
void write_plot(const std::string& path, const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows);

}  // namespace lact::bench
