// Run::check_time: the estimate of a piece of work before it runs, beside its memory check.
#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/terminal_text.h"
#include "pipeline/run.h"
#include "pipeline/stage_progress.h"

namespace lact {

void Run::check_time(const WorkSize& work, const std::string& what) {
  constexpr double kAnnounceSeconds = 60;  // longer runs say so before they start
  const double limit = common_.max_seconds;
  const double flops = work_flops(model().config(), work);
  // Work under both thresholds even at the slowest rate needs no measurement (the small runs, most of them).
  const double threshold = limit > 0 ? std::min(limit, kAnnounceSeconds) : kAnnounceSeconds;
  if (flops / (kSlowestGflops * 1e9) <= threshold) return;
  if (model_gflops_ <= 0) {
    model_->set_progress({});  // the probe draws no bars
    model_gflops_ = model_gflops(model());
    if (stage_bars_) model_->set_progress(stage_progress_bars(out_.options.quiet || !leads()));
  }
  const double gflops = model_gflops_;
  const double seconds = flops / (gflops * 1e9);
  char basis[160];
  std::snprintf(
      basis, sizeof basis,
      gflops < 10 ? "%.0f GFLOP at about %.2g GFLOP/s measured here" : "%.0f GFLOP at about %.0f GFLOP/s measured here",
      flops / 1e9, gflops);
  if (limit > 0 && seconds > limit)
    throw Error("--max-seconds", what + work_text(work) + " is estimated at " + duration_text(seconds) + " (" + basis +
                                     "), over " + duration_text(limit) +
                                     ": use a smaller --size or fewer views, or raise it");
  if (seconds > kAnnounceSeconds && leads() && !out_.options.quiet)
    std::fprintf(stderr, "lact: %s%s is estimated at %s (%s; --max-seconds refuses longer)\n",
                 terminal_text(what).c_str(), work_text(work).c_str(), duration_text(seconds).c_str(), basis);
}

}  // namespace lact
