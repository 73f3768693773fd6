// A working folder removed when a signal ends lact (Ctrl-C, kill, a closed terminal): lact import's, which holds
// the copied photos and COLMAP's database (gigabytes for a real capture). The handler says so in one line and ends
// lact by the signal as every command does (system/signal_cleanup.h: the shell sees 130 for Ctrl-C).
//
// While an InterruptCleanup lives, SIGINT, SIGTERM and SIGHUP go to a handler of its own, which stops the
// programs lact started and removes its temporaries as the usual handler does (clean_up_before_fatal_exit),
// then removes the working folder with async-signal-safe calls only (openat, getdents64, unlinkat), and the
// folders made on the way to the output while they are empty. kill -9 still leaves the folder: the next import
// into the same folder removes it.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace lact {

class InterruptCleanup {
 public:
  // `work`: the folder to remove; `made`: folders to remove after it while empty, deepest first; `note`: the line
  // written to stderr then (at most 255 bytes kept).
  InterruptCleanup(const std::string& work, const std::vector<std::string>& made, const std::string& note);
  ~InterruptCleanup();  // the usual handler again
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;

 private:
  struct sigaction previous_[3] = {};
  bool installed_[3] = {};
};

}  // namespace lact
