#include "pipeline/shape_timing.h"

#include <algorithm>
#include <chrono>

#include "system/thread_limit.h"

namespace lact {

bool is_attention(const GemmShape& s) { return s.name.rfind("attention scores", 0) == 0; }
double shape_flops(const GemmShape& s) { return (is_attention(s) ? 4.0 : 2.0) * s.m * s.n * s.k * s.batch; }

namespace {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// The clock read outside the waits' two readings: every wait counted falls within the run's wall-clock time.
void SystemRunClock::start() {
  started_ = monotonic_seconds();
  waited_ = count_waits_ ? thread_run_queue_seconds() : -1;
}

TimedRun SystemRunClock::stop() {
  const double waited = waited_ >= 0 ? thread_run_queue_seconds() : -1;
  TimedRun run;
  run.seconds = monotonic_seconds() - started_;
  if (waited >= 0) run.waited = std::min(run.seconds, std::max(0.0, waited - waited_));
  return run;
}

double quiet_seconds(const TimedRun& run) { return std::max(run.seconds - std::max(0.0, run.waited), 0.0); }

namespace {

// One run of shape `s` on operands a, b (c: the result).
void run_shape(Backend& be, const GemmShape& s, const Tensor& a, const Tensor& b, Tensor& c) {
  if (is_attention(s))
    be.attention(a, b, b, 0.125f, c);
  else
    matmul(be, a, false, b, s.transpose_b, c);
  be.synchronize();
}

}  // namespace

double time_shape(Backend& be, const GemmShape& s, RunClock& clock) {
  const int64_t a_size = s.batch * s.m * s.k, b_size = s.batch * s.k * s.n;
  std::vector<float> host(static_cast<size_t>(std::max(a_size, b_size)));
  uint32_t state = 12345;
  for (float& v : host) state = state * 1664525u + 1013904223u, v = static_cast<float>(state >> 8) / (1 << 23) - 1;
  const Tensor a = be.from_host({s.batch, s.m, s.k}, host.data());
  const Tensor b = be.from_host(s.transpose_b ? Shape{s.batch, s.n, s.k} : Shape{s.batch, s.k, s.n}, host.data());
  Tensor c = be.empty(is_attention(s) ? Shape{s.batch, s.m, s.k} : Shape{s.batch, s.m, s.n});
  // One run preempted by other work would read a tenth of the rate: every run's wait for a CPU is left out, and
  // the best of at least 3 runs read (what a run shares with other work beside the CPU, its caches, varies);
  // short runs are repeated until a few milliseconds are spent. A quiet machine's reading is kept for good.
  constexpr double kSpentSeconds = 0.004;
  constexpr int kLeastRuns = 3;
  double best = 1e30, spent = 0;
  for (int run = 0; run < 21 && (run <= kLeastRuns || spent < kSpentSeconds); ++run) {
    clock.start();
    run_shape(be, s, a, b, c);
    const TimedRun timed = clock.stop();
    if (run > 0) best = std::min(best, quiet_seconds(timed)), spent += timed.seconds;
  }
  return shape_flops(s) / std::max(best, 1e-9) / 1e9;
}

double time_shape(Backend& be, const GemmShape& s) {
  SystemRunClock clock(be.name() == "cpu");
  return time_shape(be, s, clock);
}

}  // namespace lact
