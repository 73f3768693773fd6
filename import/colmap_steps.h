// Running COLMAP's steps for `lact import`: each a subprocess with an argument vector (no shell), headless
// (QT_QPA_PLATFORM=offscreen; CPU SIFT), its whole output appended to the scene's colmap.log, and its progress
// ("Processed file [i/N]", "Matching block [i/M, j/M]", "Matching image [i/N]", "Registering image #k (n)")
// turned into lines with an ETA on stderr. Every step shares one deadline (--max-seconds), and each is stopped
// when it stalls: no output and no growth of the database for the stall time (--stall-minutes).
//
// COLMAP's output is untrusted text: lines are split without holding more than kMaxLine bytes of one, and
// numbers are read by a hand-written scan of at most 9 digits (no std::regex, whose recursion a long line
// overflows, and no std::stoi, whose exception names nothing).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "system/subprocess.h"

namespace lact {

class ColmapSteps {
 public:
  // `colmap`: the program (a name looked up on PATH, or a path); `log_path`: the log, created; `max_seconds`
  // <= 0: no limit; `stall_seconds` <= 0: no stall limit; `database`: the file whose growth counts as progress.
  // Error naming the program with how to install it when it is not found.
  ColmapSteps(const std::string& colmap, const std::string& log_path, double max_seconds, double stall_seconds,
              std::string database, bool quiet);
  ~ColmapSteps();
  ColmapSteps(const ColmapSteps&) = delete;
  ColmapSteps& operator=(const ColmapSteps&) = delete;

  // Runs `colmap <command> args...`; `what` names the step in progress lines ("features"), `total` is the
  // count the mapper's "Registering image" lines are out of. Error naming the step, its exit status and its
  // last line when it fails; Error when the deadline passes (the step is stopped).
  void run(const std::string& command, const std::vector<std::string>& args, const std::string& what, int total);
  // The rest of the first line of the step's output that starts with `prefix` (the model analyzer's "Mean
  // reprojection error: "), at most kMaxLine bytes; "" when none or the step failed.
  std::string run_for_line(const std::string& command, const std::vector<std::string>& args, const std::string& prefix);
  // Text for the log (what lact did before COLMAP ran: the files it skipped).
  void log(const std::string& text);

  double seconds_left() const;  // 0 when unlimited

 private:
  StreamLimits limits() const;
  // Runs argv with its output appended to the log, its lines to `on_line` and its last 4 KiB in `tail`.
  int run_logged(const std::vector<std::string>& argv, const std::string& command,
                 const std::function<void(const std::string&)>& on_line, std::string& tail);

  std::string program_;
  std::FILE* log_ = nullptr;
  double max_seconds_, stall_seconds_;
  std::string database_;
  bool quiet_;
  std::chrono::steady_clock::time_point start_;
};

// The progress a line of COLMAP's output reports: `done` of `total` (total 0 when the line says none). False
// for any other line, and for one whose numbers have more than 9 digits or a block grid beyond 10^9 blocks.
bool parse_colmap_progress(const std::string& line, int& done, int& total);

// A program's output cut into lines (at '\n' or '\r') for `on_line`, holding at most `max_line` bytes of an
// unfinished line: a longer line is handed over cut to `max_line` bytes and the rest of it, up to its end, dropped.
class OutputLines {
 public:
  static constexpr size_t kMaxLine = 4096;
  explicit OutputLines(std::function<void(const std::string&)> on_line, size_t max_line = kMaxLine)
      : on_line_(std::move(on_line)), max_line_(max_line) {}
  void feed(const char* data, size_t size);
  void finish();                                    // the last line, when it has no line break
  size_t buffered() const { return line_.size(); }  // bytes held of the unfinished line

 private:
  std::function<void(const std::string&)> on_line_;
  size_t max_line_;
  std::string line_;
  bool cut_ = false;  // the line being read was cut: drop the rest of it
};

}  // namespace lact
