// One thread's turn on a Run that several threads share (lact serve's scenes: their encode jobs and render threads
// take Run::exclusive in turn).
#pragma once

#include <chrono>
#include <functional>
#include <mutex>

#include "pipeline/run.h"

namespace lact::session {

// The Run for this thread alone, after any other thread using it; checked every 5 ms, so a thread told to stop
// while it waits (`stopped` true) gives up: the lock is then not owned.
inline std::unique_lock<std::timed_mutex> take_run_turn(Run& run, const std::function<bool()>& stopped) {
  std::unique_lock<std::timed_mutex> lock(run.exclusive(), std::defer_lock);
  while (!lock.try_lock_for(std::chrono::milliseconds(5)))
    if (stopped()) break;
  return lock;
}

}  // namespace lact::session
