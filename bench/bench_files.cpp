#include "bench/bench_files.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/bench_pairs.h"
#include "bench/plot.h"
#include "system/file_io.h"

namespace lact::bench {

namespace {

nlohmann::json profile_json(const std::vector<OpProfile>& profile) {
  nlohmann::json out = nlohmann::json::array();
  for (const OpProfile& p : profile)
    out.push_back({{"op", p.op}, {"calls", p.calls}, {"ms", p.milliseconds}, {"gflop", p.gflop}});
  return out;
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j{{"model", r.model},   {"precision", r.precision}, {"gemm_gflops", r.gemm_gflops},
                     {"views", r.views},   {"height", r.height},       {"width", r.width},
                     {"tokens", r.tokens}, {"attention", r.attention}, {"activations", r.activations}};
    if (r.skipped.empty()) {
      j.update({{"encode_s", r.encode_s},
                {"render_fps", r.render_fps},
                {"first_frame_s", r.first_frame.median()},
                {"state_mib", r.state_mib},
                {"encode_gflops", r.encode_gflops},
                {"render_gflops", r.render_gflops},
                {"encode_min_s", r.encode.min()},
                {"encode_max_s", r.encode.max()},
                {"encode_samples_s", r.encode.values},
                {"render_samples_s_per_view", r.render.values},
                {"open_s", r.open_s < 0 ? nlohmann::json() : nlohmann::json(r.open_s)}});
      if (!r.encode_profile.empty())
        j.update(
            {{"encode_profile", profile_json(r.encode_profile)}, {"render_profile", profile_json(r.render_profile)}});
    } else {
      j["skipped"] = r.skipped;
    }
    out.push_back(j);
  }
  return out;
}

}  // namespace

void write_json(const std::string& path, const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows) {
  nlohmann::json gemm_rates;
  for (const Row& r : rows) gemm_rates[r.precision] = r.gemm_gflops;
  const nlohmann::json json{
      {"format", "lact bench v3"},       {"gemm_gflops", gemm_rates},
      {"threads", o.common.threads},     {"device", rows.empty() ? o.common.backend : rows.front().device},
      {"precision", o.common.precision}, {"config", lact.source},
      {"rows", rows_json(rows)}};
  write_file_atomically(path, json.dump(1) + "\n");
}

namespace {

// Six significant digits: fixed decimals (std::to_string's six places) kept three of a 0.000461 s encode.
std::string csv_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

std::string bench_csv(const std::vector<Row>& rows) {
  std::ostringstream out;
  // One line per precision, views and size: both models side by side, each model's row at that precision (a run
  // with --precision bf16 times fp32 too). A ratio is left empty where the table says "not stated"; the spreads
  // ((max - min) / median, as fractions) say why.
  out << "precision,views,height,width,tokens,lact_encode_s,full_encode_s,encode_ratio_full_over_lact,"
         "lact_render_fps,full_render_fps,render_ratio_lact_over_full,lact_state_mib,full_state_mib,"
         "lact_encode_spread,full_encode_spread,lact_render_spread,full_render_spread\n";
  auto ratio = [](const std::optional<double>& value) { return value ? csv_number(*value) : std::string(); };
  std::vector<const Row*> written;
  for (const Row& at : rows) {
    if ((at.model != "lact" && at.model != "full") ||
        std::any_of(written.begin(), written.end(), [&](const Row* w) { return same_point(*w, at); }))
      continue;
    written.push_back(&at);
    const Row *l = timed_partner(rows, at, "lact"), *f = timed_partner(rows, at, "full");
    const PairRatios ratios = l && f ? pair_ratios(*f, *l) : PairRatios{};
    // "LaCT's value,full's value", each empty where that model was not timed here.
    auto both = [&](double (*get)(const Row&)) {
      return (l ? csv_number(get(*l)) : "") + "," + (f ? csv_number(get(*f)) : "");
    };
    out << at.precision << "," << at.views << "," << at.height << "," << at.width << "," << at.tokens << ","
        << both([](const Row& r) { return r.encode_s; }) << "," << ratio(ratios.encode) << ","
        << both([](const Row& r) { return r.render_fps; }) << "," << ratio(ratios.render) << ","
        << both([](const Row& r) { return r.state_mib; }) << "," << both([](const Row& r) { return r.encode.spread(); })
        << "," << both([](const Row& r) { return r.render.spread(); }) << "\n";
  }
  return out.str();
}

void write_csv(const std::string& path, const std::vector<Row>& rows) { write_file_atomically(path, bench_csv(rows)); }

namespace {

// What the plot's title says about the weights: random, or --model's file for LaCT (full attention: random).
std::string weights_text(const BenchOptions& o) {
  if (o.model.empty()) return "random weights";
  return "LaCT weights from " + std::filesystem::path(o.model).filename().string() + ", other models random weights";
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

template <typename T>
void add_unique(std::vector<T>& list, const T& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

}  // namespace

PlotFigure plot_figure(const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows) {
  PlotPanel encode{"encode time vs input tokens (median, bars min-max)", "input tokens", "encode s", {}};
  PlotPanel render{"render speed vs input tokens (median, bars min-max)", "input tokens", "render FPS", {}};
  static const std::array<std::array<unsigned char, 3>, 8> kColours = {{{20, 90, 200},
                                                                        {210, 60, 30},
                                                                        {40, 160, 60},
                                                                        {150, 60, 180},
                                                                        {230, 160, 20},
                                                                        {20, 170, 190},
                                                                        {120, 120, 120},
                                                                        {200, 60, 140}}};
  std::vector<std::string> names, precisions, devices, threads, runs;  // in the order they were run
  for (const Row& r : rows) {
    add_unique(names, r.model), add_unique(precisions, r.precision);
    if (!r.device.empty()) add_unique(devices, r.device);
    if (r.threads > 0) add_unique(threads, std::to_string(r.threads));
    if (r.skipped.empty()) add_unique(runs, std::to_string(r.encode.values.size()));
  }
  size_t colour = 0;
  for (const std::string& precision : precisions)
    for (const std::string& name : names) {
      std::string label = name == "lact" ? "LaCT" : name == "full" ? "full attention" : name;
      if (precisions.size() > 1) label += " " + precision;
      PlotSeries e{label, kColours[colour++ % kColours.size()], {}};
      PlotSeries f = e;
      for (const Row& r : rows)
        if (r.model == name && r.precision == precision && r.skipped.empty()) {
          const double tokens = static_cast<double>(r.tokens);
          e.points.push_back({tokens, r.encode_s, r.encode.min(), r.encode.max()});
          f.points.push_back({tokens, r.render_fps, 1.0 / r.render.max(), 1.0 / r.render.min()});
        }
      auto by_x = [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; };
      std::sort(e.points.begin(), e.points.end(), by_x);
      std::sort(f.points.begin(), f.points.end(), by_x);
      if (!e.points.empty()) encode.series.push_back(e), render.series.push_back(f);
    }
  const std::string config =
      o.model.empty() ? "config " + o.config : "model " + std::filesystem::path(o.model).filename().string();
  PlotFigure figure;
  figure.title.push_back("lact bench: " + config + " (" + std::to_string(lact.layers) + " layers, dim " +
                         std::to_string(lact.dim) + "), " + weights_text(o) + "; " + joined(runs) +
                         " timed runs per point");
  figure.title.push_back("device " + (devices.empty() ? o.common.backend : joined(devices)) + "; " +
                         (threads.empty() ? "all cores" : joined(threads)) + " thread(s); precision " +
                         joined(precisions));
  figure.panels = {encode, render};
  return figure;
}

void write_plot(const std::string& path, const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows) {
  write_loglog_png(path, plot_figure(o, lact, rows));
}

}  // namespace lact::bench
