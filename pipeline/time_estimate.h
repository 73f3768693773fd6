// How long a piece of work will take, before it runs: its FLOPs from the model's config (core/flop_model.h, as
// `lact bench` counts them) over a rate measured once per machine and kept (pipeline/rate_cache.h), scaled by the
// CPUs other running work takes at the moment of the estimate. A run estimated over a minute says so in one line,
// and --max-seconds refuses one estimated over it.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"
#include "kernels/backend.h"
#include "pipeline/rate_cache.h"
#include "system/thread_limit.h"

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
  double gflops = 0;                 // the rate the work's counted FLOPs are read at, quiet (before `slowdown`)
  double attention_seconds = 0;      // of `seconds`: attention ops (the rest: products and the work around them)
  int measured = 0;                  // product shapes timed now (0: every rate came from the cache)
  double slowdown = 1;               // `seconds` over the time at the rates measured (other running work takes CPUs)
  int others_running = 0, cpus = 0;  // the load assumed: other running threads on the machine's CPUs (0: quiet)
};

// The CPUs a piece of work shares with other work: the backend's worker threads beside the load read now.
struct CpuShare {
  int threads = 0;      // the backend's worker threads (0: not a CPU backend, whose time the CPUs' load leaves)
  int usable_cpus = 1;  // the CPUs this process may run on
  MachineLoad load;
};
// A CPU backend's threads, usable_cpus() and machine_load() (the reading default_threads() makes); threads 0 for
// any other backend.
CpuShare cpu_share_now(Backend& be);
// How many times as long work on `share.threads` threads takes as at the rates timed quiet: every running thread
// gets an equal part of the CPUs (the scheduler's fair share), so past one thread a CPU, (threads + the others'
// threads on these CPUs) / usable CPUs; the others spread over every online CPU, as threads_beside counts them.
// A count, not a measurement: Linux's autogroup shares the CPUs between sessions first, so threads in lact's own
// session take more than this says and another session's many threads less (docs/guide/using.md).
double load_slowdown(const CpuShare& share);

// Each module's counted FLOPs (core/flop_model.h) at the rates of its own matrix-product shapes and attention op
// on `be` at the work's token counts (each shape timed once per machine, backend, precision and thread count, a
// few milliseconds, as on a quiet machine: pipeline/shape_timing.h; kept in `cache`), plus the time the rest takes
// (norms, activations, moving heads) in proportion. No part of the model runs: the probe this replaced encoded a view
// twice before every large job. In all: (products' seconds) x (1 + 85 / dim) + attention's seconds, times
// load_slowdown(cpu_share_now(be)); the products no kind lists (the patch embedding and the image head) at the mean
// rate of the listed ones.
TimeEstimate estimate_time(Backend& be, const ModelConfig& config, const WorkSize& work, RateCache& cache);
// The same beside a given share of the CPUs (cpu_share_now(be) above).
TimeEstimate estimate_time(Backend& be, const ModelConfig& config, const WorkSize& work, RateCache& cache,
                           const CpuShare& share);
// What the estimate rests on, for its line: "3434 GFLOP at about 19 GFLOP/s measured here", then, beside other
// running work, ", 1.5x as long beside 3 other running threads on 2 CPUs".
std::string estimate_basis(const TimeEstimate& estimate);

// The part of the cache's keys that names this machine and backend: the CPU's model, the backend's name,
// precision and device line (threads and product library).
std::string rate_cache_machine(Backend& be);

// "45 s", "3.2 min", "1.5 h".
std::string duration_text(double seconds);

}  // namespace lact
