// Run::check_time: the estimate of a piece of work before it runs, beside its memory check.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/terminal_text.h"
#include "pipeline/run.h"

namespace lact {

void Run::check_time(const WorkSize& work, const std::string& what) {
  constexpr double kAnnounceSeconds = 60;  // longer runs say so before they start
  const double limit = common_.max_seconds;
  // LACT_TIME_ESTIMATE=1 prints every estimate (the benchmark and the tests compare it with the run it precedes).
  const bool print_every = std::getenv("LACT_TIME_ESTIMATE") != nullptr;
  // Work under both thresholds even at the slowest rate needs no estimate (the small runs, most of them).
  const double threshold = limit > 0 ? std::min(limit, kAnnounceSeconds) : kAnnounceSeconds;
  if (!print_every && work_flops(model().config(), work) / (kSlowestGflops * 1e9) <= threshold) return;
  const TimeEstimate estimate = estimate_time(model().backend(), model().config(), work, rate_cache_);
  const double seconds = estimate.seconds;
  char basis[160];
  std::snprintf(basis, sizeof basis,
                estimate.gflops < 10 ? "%.0f GFLOP at about %.2g GFLOP/s measured here"
                                     : "%.0f GFLOP at about %.0f GFLOP/s measured here",
                estimate.flops / 1e9, estimate.gflops);
  if (print_every && leads())
    std::fprintf(stderr,
                 "lact: note: time estimate: %s%s: %.3f s (%s; attention %.3f s; %d shapes timed now, rates in %s)\n",
                 terminal_text(what).c_str(), work_text(work).c_str(), seconds, basis, estimate.attention_seconds,
                 estimate.measured, rate_cache_.path().empty() ? "no file" : terminal_text(rate_cache_.path()).c_str());
  if (limit > 0 && seconds > limit)
    throw Error("--max-seconds", what + work_text(work) + " is estimated at " + duration_text(seconds) + " (" + basis +
                                     "), over " + duration_text(limit) +
                                     ": use a smaller --size or fewer views, or raise it");
  if (seconds > kAnnounceSeconds && leads() && !out_.options.quiet)
    std::fprintf(stderr, "lact: %s%s is estimated at %s (%s; --max-seconds refuses longer)\n",
                 terminal_text(what).c_str(), work_text(work).c_str(), duration_text(seconds).c_str(), basis);
}

}  // namespace lact
