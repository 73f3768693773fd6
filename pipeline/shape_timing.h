// Timing one of a model's matrix-product shapes (or its fused attention op) on a backend, for the time estimate
// (pipeline/time_estimate.h): the rate it runs at on a quiet machine, even while other work holds the CPUs. The
// estimate scales that rate by the load once (load_slowdown); a rate read off the wall clock beside other work
// would carry the load a second time.
#pragma once

#include "core/module_kind.h"
#include "kernels/backend.h"

namespace lact {

// Attention's score product stands for the whole op (the scores, their softmax, the product with v): the backend's
// fused attention is timed for it, and it counts as two products.
bool is_attention(const GemmShape& s);
double shape_flops(const GemmShape& s);

// One timed run: its wall-clock seconds, and of them the seconds the thread that ran it waited for a CPU
// (runnable but not running: other work held the CPUs).
struct TimedRun {
  double seconds = 0, waited = 0;
};

// What a run is timed with: start() before it, stop() after it.
class RunClock {
 public:
  virtual ~RunClock() = default;
  virtual void start() = 0;
  virtual TimedRun stop() = 0;
};

// The monotonic clock and, with `count_waits`, the calling thread's run-queue time as the kernel counts it
// (/proc/thread-self/schedstat; waited 0 where it cannot be read). Only the calling thread's: the kernel adds a
// wait when the thread gets its CPU back, so a running thread's count is whole, while another thread's may still
// grow by a wait that began before start(). A GPU backend's time is the device's: its host thread waiting for a
// CPU is not the run's, so it counts no waits.
class SystemRunClock : public RunClock {
 public:
  explicit SystemRunClock(bool count_waits) : count_waits_(count_waits) {}
  void start() override;
  TimedRun stop() override;

 private:
  bool count_waits_;
  double started_ = 0, waited_ = 0;  // at start()
};

// The seconds a run takes on a quiet machine: its wall-clock time less its wait for a CPU. With several threads
// a worker's wait (the calling thread idle at a barrier meanwhile) is not left out: such a reading errs slow.
double quiet_seconds(const TimedRun& run);

// GFLOP/s of shape `s` on `be` on a quiet machine: the shortest quiet_seconds of its runs after one that sets it
// up (oneDNN builds its kernel on the first call), on pseudo-random operands (some units run faster on zeros).
// At least 3 timed runs, and small shapes until a few milliseconds of wall-clock time are spent (up to 20).
double time_shape(Backend& be, const GemmShape& s, RunClock& clock);
// The same with SystemRunClock, counting waits on the CPU backend.
double time_shape(Backend& be, const GemmShape& s);

}  // namespace lact
