// The one clock of lact's timings: std::chrono::steady_clock (it never jumps with the wall clock), read in
// seconds as a double.
#pragma once

#include <chrono>

namespace lact {

using SteadyClock = std::chrono::steady_clock;

// Seconds on the steady clock (from an arbitrary start: only differences mean anything).
inline double now_seconds() { return std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count(); }

// Seconds since `start`.
inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace lact
