#include "pipeline/progress.h"

#include <unistd.h>

#include <cstdio>

namespace lact {

Progress::Progress(std::string what, int total, bool quiet)
    : what_(std::move(what)), total_(total), enabled_(!quiet && isatty(fileno(stderr))),
      start_(std::chrono::steady_clock::now()) {
  if (enabled_) draw("");
}

Progress::~Progress() {
  if (enabled_) std::fprintf(stderr, "\n");
}

void Progress::step(const std::string& item) {
  ++done_;
  if (enabled_) draw(item);
}

void Progress::draw(const std::string& item) {
  constexpr int kWidth = 30;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int filled = total_ ? kWidth * done_ / total_ : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  const double eta = done_ ? elapsed / done_ * (total_ - done_) : 0;
  std::fprintf(stderr, "\r[%s] %d/%d %s, %.0f s elapsed, ETA %.0f s %-24.24s", bar.c_str(), done_, total_,
               what_.c_str(), elapsed, eta, item.c_str());
  std::fflush(stderr);
}

}  // namespace lact
