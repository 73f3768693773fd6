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
  // count the mapper's "Registering image" lines are out of (the line shows the most registered so far, never
  // less). Error naming the step, its exit status, its last line and what a known line before it means when it
  // fails; Error when the deadline passes (the step is stopped). COLMAP logs to its output (--log_to_stderr), so
  // glog writes no files of its own.
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

// Progress lines for one COLMAP step ("lact import: mapping 7/30, 12 s, ETA 40 s") on stderr: at most one every
// `interval_s`, with the time left extrapolated from the rate so far, and a count that never goes back.
class StepProgress {
 public:
  StepProgress(std::string what, int total, bool quiet, double interval_s = 2.0)
      : what_(std::move(what)), total_(total), quiet_(quiet), interval_s_(interval_s) {}
  // A line of COLMAP's output: the progress line it gives (printed unless quiet), or "" (none due, or none).
  std::string line(const std::string& text);
  void finished() const;

 private:
  std::string what_;
  int total_, most_ = 0;
  bool quiet_;
  double interval_s_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(),
                                        last_ = std::chrono::steady_clock::now() - std::chrono::hours(1);
};

// The usual causes of a COLMAP model that failed, or holds too few photos, and their cure.
inline constexpr const char* kColmapUsualCauses =
    "Usual causes: too little overlap or parallax between the photos (all taken from one spot, or too far apart), "
    "motion blur, too little texture, or a moving subject; take more photos, each a step from the last and "
    "overlapping it by more than half";

// What a line COLMAP prints before it fails means, with the usual causes ("COLMAP found no pair of photos to
// start the model from ('No good initial image pair found'). Usual causes: ..."); "" for any other line.
std::string colmap_failure_cause(const std::string& line);
// SQLite's reason when `line` is COLMAP's report of a database write that failed ("SQLite error [...]: disk I/O
// error" under a full disk or `ulimit -f`): COLMAP goes on and registers fewer photos; "" for any other line.
std::string colmap_storage_error(const std::string& line);

// The colmap program's path: `colmap` found on PATH, or the path given. Error naming it when there is none ("no
// such file", "is not executable", or how to install COLMAP when the name is not on PATH).
std::string find_colmap(const std::string& colmap);

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
