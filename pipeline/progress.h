// A one-line progress bar on a terminal (stderr): done / total, elapsed, ETA. Silent when quiet or when
// stderr is not a TTY. A transient bar (a stage inside a scene: encode layers, rendered views) clears its line
// when it ends, so the bar around it (the scenes) is the one left on the screen.
#pragma once

#include <chrono>
#include <string>

namespace lact {

class Progress {
 public:
  Progress(std::string what, int total, bool quiet, bool transient = false);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void step(const std::string& item);           // one more done (item = what was just finished)
  void set(int done, const std::string& item);  // `done` of the total done
  // Whether bars are drawn at all for `quiet` (stderr a TTY).
  static bool shown(bool quiet);

 private:
  void draw(const std::string& item);
  std::string what_;
  int total_, done_ = 0;
  bool enabled_, transient_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lact
