// Running COLMAP's steps for `lact import`: each a subprocess with an argument vector (no shell), headless
// (QT_QPA_PLATFORM=offscreen; CPU SIFT), its whole output appended to the scene's colmap.log, and its progress
// ("Processed file [i/N]", "Matching block [i/M, j/M]", "Matching image [i/N]", "Registering image #k (n)")
// turned into lines with an ETA on stderr. Every step shares one deadline (--max-seconds).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace lact {

class ColmapSteps {
 public:
  // `colmap`: the program (a name looked up on PATH, or a path); `log_path`: the log, created; `max_seconds`
  // <= 0: no limit. Error naming the program with how to install it when it is not found.
  ColmapSteps(const std::string& colmap, const std::string& log_path, double max_seconds, bool quiet);
  ~ColmapSteps();
  ColmapSteps(const ColmapSteps&) = delete;
  ColmapSteps& operator=(const ColmapSteps&) = delete;

  // Runs `colmap <command> args...`; `what` names the step in progress lines ("features"), `total` is the
  // count the mapper's "Registering image" lines are out of. Error naming the step, its exit status and its
  // last line when it fails; Error when the deadline passes (the step is stopped).
  void run(const std::string& command, const std::vector<std::string>& args, const std::string& what, int total);
  // The step's whole output, for parsing (the model analyzer's statistics).
  std::string run_captured(const std::string& command, const std::vector<std::string>& args);

  double seconds_left() const;  // 0 when unlimited

 private:
  std::string program_;
  std::FILE* log_ = nullptr;
  double max_seconds_;
  bool quiet_;
  std::chrono::steady_clock::time_point start_;
};

// The progress a line of COLMAP's output reports: `done` of `total` (total 0 when the line says none).
bool parse_colmap_progress(const std::string& line, int& done, int& total);

}  // namespace lact
