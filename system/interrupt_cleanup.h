// A working folder removed when a signal ends lact (Ctrl-C, kill, a closed terminal): lact import's, which holds
// the copied photos and COLMAP's database (gigabytes for a real capture). The handler says so in one line and ends
// lact by the signal as every command does (system/signal_cleanup.h: the shell sees 130 for Ctrl-C).
//
// While an InterruptCleanup lives, the usual handler of SIGINT, SIGTERM and SIGHUP (install_signal_cleanup), once
// it has stopped the programs lact started and removed its temporaries, removes the working folder with
// async-signal-safe calls only (openat, getdents64, unlinkat), and the folders made on the way to the output
// while they are empty (set_signal_cleanup_step). kill -9 still leaves the folder: the next import
// into the same folder removes it.
#pragma once

#include <string>
#include <vector>

namespace lact {

class InterruptCleanup {
 public:
  // `work`: the folder to remove; `made`: folders to remove after it while empty, deepest first; `note`: the line
  // written to stderr then (at most 255 bytes kept).
  InterruptCleanup(const std::string& work, const std::vector<std::string>& made, const std::string& note);
  ~InterruptCleanup();  // the usual cleanup again
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;
};

}  // namespace lact
