// A one-line progress bar on a terminal (stderr): done / total, elapsed, ETA. Silent when quiet or when
// stderr is not a TTY.
#pragma once

#include <chrono>
#include <string>

namespace lact {

class Progress {
 public:
  Progress(std::string what, int total, bool quiet);
  ~Progress();
  void step(const std::string& item);  // one more done (item = what was just finished)

 private:
  void draw(const std::string& item);
  std::string what_;
  int total_, done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lact
