#include "pipeline/time_estimate.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "core/flop_model.h"
#include "core/module_kind.h"
#include "pipeline/shape_timing.h"
#include "system/thread_limit.h"

namespace lact {

double work_flops(const ModelConfig& config, const WorkSize& work) {
  const int patch = config.patch_size;
  const int64_t per_view = static_cast<int64_t>(work.height / patch) * (work.width / patch);
  double flops = 0;
  if (work.encode_views > 0) flops += encode_flops(config, work.encode_views * per_view, per_view);
  for (const WorkSize::Renders& r : work.renders) {
    const int64_t target = static_cast<int64_t>(r.height / patch) * (r.width / patch);
    flops += static_cast<double>(r.views) * render_flops(config, target, work.state_views * per_view);
  }
  return flops;
}

std::string work_text(const WorkSize& work) {
  std::string text;
  if (work.encode_views > 0)
    text = "encoding " + std::to_string(work.encode_views) + (work.encode_views > 1 ? " views at " : " view at ") +
           std::to_string(work.height) + "x" + std::to_string(work.width);
  int64_t rendered = 0;
  for (const WorkSize::Renders& r : work.renders) rendered += r.views;
  if (rendered > 0)
    text += (text.empty() ? "rendering " : " and rendering ") + std::to_string(rendered) +
            (rendered > 1 ? " views" : " view");
  if (rendered > 0 && work.renders.size() == 1)
    text += " at " + std::to_string(work.renders[0].height) + "x" + std::to_string(work.renders[0].width);
  return text;
}

namespace {

// A shape as timed: its batch, then its token-long sides (an m or k of `tokens` or `per_view`, never a model
// width), cut by halves until one product is about kTimedFlops (a few milliseconds even on one slow thread). Past
// a few hundred rows the rate hardly changes, and one cut shape serves every larger scene.
GemmShape timed_shape(GemmShape s, int64_t tokens, int64_t per_view) {
  constexpr double kTimedFlops = 2e8;
  constexpr int64_t kRowsKept = 128;
  const bool cut_m = s.m == tokens || s.m == per_view, cut_k = s.k == tokens || s.k == per_view;
  auto flops = [&s] { return 2.0 * s.m * s.n * s.k * s.batch; };
  while (flops() > kTimedFlops && s.batch > 1) s.batch = (s.batch + 1) / 2;
  while (flops() > kTimedFlops) {
    int64_t* longer = cut_m && s.m > kRowsKept && (!cut_k || s.m >= s.k) ? &s.m : nullptr;
    if (!longer && cut_k && s.k > kRowsKept) longer = &s.k;
    if (!longer) break;
    *longer = std::max(kRowsKept, (*longer / 2 + 63) / 64 * 64);
  }
  return s;
}

std::string shape_key(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "x" + std::to_string(s.batch) +
         (is_attention(s) ? "a"
          : s.transpose_b ? "t"
                          : "n");
}

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(std::min(line.size(), line.find(':') + 2));
  return "unknown CPU";
}

}  // namespace

std::string rate_cache_machine(Backend& be) {
  static const std::string cpu = cpu_model_name();
  return cpu + " | " + be.name() + " " + precision_name(be.precision()) + " | " + be.device_description();
}

namespace {

// A shape's rate from the cache, else timed now. Every rate is a quiet machine's (time_shape leaves out the waits
// for a CPU), which the estimate scales by the load once. A rate timed beside other work may still read low (the
// caches shared, waits at different moments): it is kept apart ("busy ..."), timed again at each run while the
// machine stays busy, the best reading kept, and kept for good once timed on a quiet machine.
double shape_gflops(Backend& be, const std::string& key, const GemmShape& cut, RateCache& cache,
                    std::map<std::string, double>& timed) {
  if (const double kept = cache.find(key); kept > 0) return kept;
  if (timed.count(key)) return timed[key];
  const double now = time_shape(be, cut);
  return timed[key] = machine_busy() ? std::max(now, cache.find("busy " + key)) : now;
}

// The rates of one pass, timed or read once, and where the seconds of its FLOPs go.
struct PassTimer {
  Backend& be;
  RateCache& cache;
  std::string machine;
  std::map<std::string, double> timed;
  double product_seconds = 0, attention_seconds = 0;
  double listed_all = 0, listed_all_seconds = 0;  // every listed product so far: their mean rate
  double unlisted = 0;                            // FLOPs of the products no kind lists

  double gflops(const GemmShape& s, int64_t tokens, int64_t per_view) {
    const GemmShape cut = timed_shape(s, tokens, per_view);
    return shape_gflops(be, machine + " | " + shape_key(cut), cut, cache, timed);
  }
  // One module's `flops` (one layer's on one pass's tokens, the kind's count), run `repeats` times (the layers,
  // times the rendered views), at the rates of its shapes at these token counts: its attention op is whatever its
  // listed products leave of the layer's count, the rest at the products' mean rate.
  void add_module(const ModelConfig& c, const ModuleConfig& m, double flops, double repeats, int64_t tokens,
                  int64_t per_view) {
    double listed = 0, listed_seconds = 0, attention_gflops = 0;
    for (const GemmShape& s : m.kind->gemm_shapes(c, m, tokens, per_view)) {
      if (is_attention(s)) {
        attention_gflops = gflops(s, tokens, per_view);
        continue;
      }
      listed += shape_flops(s), listed_seconds += shape_flops(s) / (gflops(s, tokens, per_view) * 1e9);
    }
    const double attention = attention_gflops > 0 ? std::max(0.0, flops - listed) : 0.0;
    attention_seconds += attention > 0 ? repeats * attention / (attention_gflops * 1e9) : 0;
    const double mean_rate = listed_seconds > 0 ? listed / listed_seconds : kSlowestGflops * 1e9;
    product_seconds += repeats * (flops - attention) / mean_rate;
    listed_all += repeats * listed, listed_all_seconds += repeats * listed_seconds;
  }
  // Products no kind lists (the patch embedding and the image head): at the mean rate of all those listed, once
  // every module is added (finish).
  void add_products(double flops) { unlisted += flops; }
  void finish() {
    product_seconds += unlisted / (listed_all_seconds > 0 ? listed_all / listed_all_seconds : kSlowestGflops * 1e9);
    unlisted = 0;
  }
  void keep_timed() {
    if (timed.empty()) return;
    std::map<std::string, double> kept;
    const bool busy = machine_busy();
    for (const auto& [key, rate] : timed) kept[busy ? "busy " + key : key] = rate;
    cache.keep(kept);
  }
};

// Everything but the products and attention (norms, activations, moving heads, allocations) takes time in
// proportion to the tokens x width where the products take tokens x width^2: measured (lact bench --profile, one
// thread) at 0.67 of the products' time at width 128 (the shipped model) and 0.11 at 768 (the paper's), both
// 85 / width.
constexpr double kOtherWorkWidth = 85;

}  // namespace

CpuShare cpu_share_now(Backend& be) {
  CpuShare share;
  if (be.name() != "cpu") return share;
  share.threads = omp_get_max_threads();  // what the CPU backend's loops and products run on (set_threads)
  share.usable_cpus = usable_cpus();
  share.load = machine_load();
  return share;
}

double load_slowdown(const CpuShare& share) {
  if (share.threads <= 0 || share.load.others_running <= 0) return 1;
  const int cpus = std::max(1, share.usable_cpus), online = std::max(share.load.cpus, cpus);
  const double others_here = static_cast<double>(share.load.others_running) * cpus / online;
  return std::max(1.0, (share.threads + others_here) / cpus);
}

TimeEstimate estimate_time(Backend& be, const ModelConfig& config, const WorkSize& work, RateCache& cache) {
  return estimate_time(be, config, work, cache, cpu_share_now(be));
}

TimeEstimate estimate_time(Backend& be, const ModelConfig& config, const WorkSize& work, RateCache& cache,
                           const CpuShare& share) {
  TimeEstimate estimate;
  PassTimer timer{be, cache, rate_cache_machine(be), {}};
  const int patch = config.patch_size;
  const int64_t per_view = static_cast<int64_t>(work.height / patch) * (work.width / patch);
  const double embedding = 2.0 * config.input_channels() * config.dim;  // per token
  const double head = 2.0 * config.dim * config.output_channels();      // per rendered token
  if (work.encode_views > 0) {
    const int64_t tokens = work.encode_views * per_view;
    for (const ModuleConfig& m : config.block)
      timer.add_module(config, m, m.kind->encode_flops(config, m, tokens, per_view), config.layers, tokens, per_view);
    timer.add_products(embedding * tokens);
    estimate.flops += encode_flops(config, tokens, per_view);
  }
  // A rendered view runs the model's layers on its own tokens (no update), reading the state.
  for (const WorkSize::Renders& r : work.renders) {
    const int64_t target = static_cast<int64_t>(r.height / patch) * (r.width / patch);
    const double views = static_cast<double>(r.views);
    for (const ModuleConfig& m : config.block)
      timer.add_module(config, m, m.kind->render_flops(config, m, target, work.state_views * per_view),
                       views * config.layers, target, target);
    timer.add_products(views * (embedding + head) * target);
    estimate.flops += views * render_flops(config, target, work.state_views * per_view);
  }
  timer.finish();
  timer.keep_timed();
  estimate.measured = static_cast<int>(timer.timed.size());
  const double quiet = timer.product_seconds * (1 + kOtherWorkWidth / config.dim) + timer.attention_seconds;
  estimate.gflops = quiet > 0 ? estimate.flops / quiet / 1e9 : 0;  // the rate measured, before the load
  estimate.slowdown = load_slowdown(share);
  if (share.threads > 0) estimate.others_running = share.load.others_running, estimate.cpus = share.load.cpus;
  estimate.seconds = quiet * estimate.slowdown;
  estimate.attention_seconds = timer.attention_seconds * estimate.slowdown;
  return estimate;
}

std::string estimate_basis(const TimeEstimate& estimate) {
  char text[200];
  int n = std::snprintf(text, sizeof text,
                        estimate.gflops < 10 ? "%.0f GFLOP at about %.2g GFLOP/s measured here"
                                             : "%.0f GFLOP at about %.0f GFLOP/s measured here",
                        estimate.flops / 1e9, estimate.gflops);
  if (estimate.others_running > 0 && n > 0 && n < static_cast<int>(sizeof text)) {
    char slower[32] = "";
    if (estimate.slowdown > 1) std::snprintf(slower, sizeof slower, " %.2gx as long", estimate.slowdown);
    std::snprintf(text + n, sizeof text - n, ",%s beside %d other running thread%s on %d CPU%s", slower,
                  estimate.others_running, estimate.others_running == 1 ? "" : "s", estimate.cpus,
                  estimate.cpus == 1 ? "" : "s");
  }
  return text;
}

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 10)
    std::snprintf(text, sizeof text, "%.2g s", seconds);
  else if (seconds < 90)
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 90 * 60)
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  else
    std::snprintf(text, sizeof text, seconds < 100 * 3600 ? "%.1f h" : "%.0f h", seconds / 3600);
  return text;
}

}  // namespace lact
