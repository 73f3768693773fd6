// Run::check_time: the estimate of a piece of work before it runs, beside its memory check.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "pipeline/env_switch.h"
#include "pipeline/run.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

// Work estimated over an hour without --max-seconds: on a terminal lact asks before it starts; elsewhere (a script,
// a batch job) nobody could answer or stop it in time, so it is refused with how to allow it.
void confirm_long_run(const std::string& work, const std::string& duration) {
  const std::string refused =
      work + " is estimated at " + duration + ", over an hour: not started (--max-seconds N allows up to N seconds)";
  if (!::isatty(STDIN_FILENO) || !::isatty(STDERR_FILENO)) throw Error("--max-seconds", refused);
  std::fprintf(stderr, "lact: start it anyway? [y/N] ");
  std::fflush(stderr);
  char answer[16] = "";
  if (!std::fgets(answer, sizeof answer, stdin) || (answer[0] != 'y' && answer[0] != 'Y'))
    throw Error("--max-seconds", refused);
}

}  // namespace

void Run::check_time(const WorkSize& work, const std::string& what) {
  constexpr double kAnnounceSeconds = 60;  // longer runs say so before they start
  const double limit = common_.max_seconds;
  // LACT_TIME_ESTIMATE=1 prints every estimate (the benchmark and the tests compare it with the run it precedes).
  const bool print_every = diagnostic_switch("LACT_TIME_ESTIMATE");
  // Work under both thresholds even at the slowest rate needs no estimate (the small runs, most of them).
  const double threshold = limit > 0 ? std::min(limit, kAnnounceSeconds) : kAnnounceSeconds;
  if (!print_every && work_flops(model().config(), work) / (kSlowestGflops * 1e9) <= threshold) return;
  const TimeEstimate estimate = estimate_time(model().backend(), model().config(), work, rate_cache_);
  const double seconds = estimate.seconds;
  const std::string basis = estimate_basis(estimate);
  if (print_every && leads())
    std::fprintf(
        stderr, "lact: note: time estimate: %s%s: %.3f s (%s; attention %.3f s; %d shapes timed now, rates in %s)\n",
        terminal_text(what).c_str(), work_text(work).c_str(), seconds, basis.c_str(), estimate.attention_seconds,
        estimate.measured, rate_cache_.path().empty() ? "no file" : terminal_text(rate_cache_.path()).c_str());
  if (limit > 0 && seconds > limit)
    throw Error("--max-seconds", what + work_text(work) + " is estimated at " + duration_text(seconds) + " (" + basis +
                                     "), over " + duration_text(limit) +
                                     ": use a smaller --size or fewer views, or raise it");
  if (seconds > kAnnounceSeconds && leads() && !out_.options.quiet)
    std::fprintf(stderr, "lact: %s%s is estimated at %s (%s; --max-seconds refuses longer)\n",
                 terminal_text(what).c_str(), work_text(work).c_str(), duration_text(seconds).c_str(), basis.c_str());
  constexpr double kAskSeconds = 3600;
  if (limit <= 0 && seconds > kAskSeconds && ranks() == 1)  // across ranks no one rank may ask for all
    confirm_long_run(terminal_text(what) + work_text(work), duration_text(seconds));
}

}  // namespace lact
