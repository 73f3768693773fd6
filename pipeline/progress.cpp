#include "pipeline/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "system/terminal_text.h"

namespace lact {

namespace {
// The width of what is on the bar's line now: a shorter line (or a cleared one) is padded with spaces over it.
// No terminal escapes at all (only \r and spaces): the line stays plain text.
size_t line_width = 0;

void show_line(const std::string& text) {
  std::string line = "\r" + text;
  if (text.size() < line_width) line += std::string(line_width - text.size(), ' ') + "\r" + text;
  line_width = text.size();
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}
}  // namespace

bool Progress::shown(bool quiet) { return !quiet && isatty(fileno(stderr)); }

Progress::Progress(std::string what, int total, bool quiet, bool transient)
    : what_(std::move(what)),
      total_(total),
      enabled_(shown(quiet)),
      transient_(transient),
      start_(std::chrono::steady_clock::now()) {
  if (enabled_) draw("");
}

Progress::~Progress() {
  if (!enabled_) return;
  if (transient_) {
    show_line("");  // cleared: the bar around it is redrawn at its next step
  } else {
    std::fputs("\n", stderr);
    line_width = 0;
  }
  std::fflush(stderr);
}

void Progress::step(const std::string& item) { set(done_ + 1, item); }

void Progress::set(int done, const std::string& item) {
  done_ = done;
  if (enabled_) draw(item);
}

void Progress::draw(const std::string& item) {
  constexpr int kWidth = 30;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int filled = total_ ? kWidth * done_ / total_ : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  const double eta = done_ ? elapsed / done_ * (total_ - done_) : 0;
  const std::string eta_text = done_ ? std::to_string(std::lround(eta)) + " s" : "?";
  // The item is a name from data (a scene's): escaped, so it cannot drive the terminal.
  char text[512];
  std::snprintf(text, sizeof text, "[%s] %d/%d %s, %.0f s elapsed, ETA %s %s", bar.c_str(), done_, total_,
                terminal_text(what_).c_str(), elapsed, eta_text.c_str(), terminal_column(item, 24).c_str());
  show_line(text);
}

}  // namespace lact
