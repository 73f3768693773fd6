// How long a piece of work will take, before it runs: its FLOPs from the model's config (core/flop_model.h, as
// `lact bench` counts them) over a rate measured once per machine and kept (pipeline/rate_cache.h). A run estimated
// over a minute says so in one line, and
// --max-seconds refuses one estimated over it.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "kernels/backend.h"
#include "pipeline/rate_cache.h"

namespace lact {

// One piece of work: encoding `encode_views` views at height x width (of `state_views` in all, whose tokens
// full attention reads while rendering), then rendering views at their sizes.
struct WorkSize {
  int64_t encode_views = 0, state_views = 0;
  int height = 0, width = 0;  // the input views' size
  struct Renders {
    int height, width;
    int64_t views;
  };
  std::vector<Renders> renders;
};
double work_flops(const ModelConfig& config, const WorkSize& work);
// "encoding 8 views at 4096x4096 and rendering 2 views"
std::string work_text(const WorkSize& work);

// The rate no backend runs the model below (GFLOP/s): work under a minute even at it needs no measurement.
constexpr double kSlowestGflops = 1.0;

// What a piece of work is estimated to take on a backend, and what the estimate rests on.
struct TimeEstimate {
  double seconds = 0, flops = 0;
  double gflops = 0;             // the rate the work's counted FLOPs are read at (its products and everything else)
  double attention_seconds = 0;  // of `seconds`: attention ops (the rest: products and the work around them)
  int measured = 0;              // product shapes timed now (0: every rate came from the cache)
};

// Each module's counted FLOPs (core/flop_model.h) at the rates of its own matrix-product shapes and attention op
// on `be` at the work's token counts (each shape timed once per machine, backend, precision and thread count, a
// few milliseconds, and kept in `cache`), plus the time the rest takes (norms, activations, moving heads) in
// proportion. No part of the model runs: the probe this replaced encoded a view twice before every large job.
TimeEstimate estimate_time(Backend& be, const ModelConfig& config, const WorkSize& work, RateCache& cache);

// The part of the cache's keys that names this machine and backend: the CPU's model, the backend's name,
// precision and device line (threads and product library).
std::string rate_cache_machine(Backend& be);

// "45 s", "3.2 min", "1.5 h".
std::string duration_text(double seconds);

}  // namespace lact
