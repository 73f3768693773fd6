#include "pipeline/progress.h"

#include <unistd.h>

#include <cstdio>

#include "core/terminal_text.h"

namespace lact {

Progress::Progress(std::string what, int total, bool quiet)
    : what_(std::move(what)),
      total_(total),
      enabled_(!quiet && isatty(fileno(stderr))),
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
  // The item is a name from data (a scene's): escaped, so it cannot drive the terminal.
  std::fprintf(stderr, "\r[%s] %d/%d %s, %.0f s elapsed, ETA %.0f s %s", bar.c_str(), done_, total_,
               terminal_text(what_).c_str(), elapsed, eta, terminal_column(item, 24).c_str());
  std::fflush(stderr);
}

}  // namespace lact
