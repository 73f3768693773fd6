#include "pipeline/colmap_steps.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "core/error.h"
#include "pipeline/subprocess.h"

namespace lact {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Progress lines for one step: at most one every 2 s, with the time left extrapolated from the rate so far.
class StepProgress {
 public:
  StepProgress(std::string what, int total, bool quiet) : what_(std::move(what)), total_(total), quiet_(quiet) {}
  void line(const std::string& text) {
    int done = 0, total = 0;
    if (!parse_colmap_progress(text, done, total)) return;
    if (total == 0) total = total_;
    if (quiet_ || total <= 0 || done <= 0 || seconds_since(last_) < 2.0) return;
    last_ = Clock::now();
    const double elapsed = seconds_since(start_), eta = elapsed / done * std::max(0, total - done);
    std::fprintf(stderr, "lact import: %s %d/%d, %.0f s, ETA %.0f s\n", what_.c_str(), std::min(done, total), total,
                 elapsed, eta);
  }
  void finished() const {
    if (!quiet_) std::fprintf(stderr, "lact import: %s done in %.1f s\n", what_.c_str(), seconds_since(start_));
  }

 private:
  std::string what_;
  int total_;
  bool quiet_;
  Clock::time_point start_ = Clock::now(), last_ = Clock::now() - std::chrono::seconds(10);
};

// The last non-empty line of `text`, at most 200 bytes.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  const size_t begin = text.find_last_of("\r\n", end);
  const size_t start = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(start, std::min<size_t>(end + 1 - start, 200));
}

}  // namespace

bool parse_colmap_progress(const std::string& line, int& done, int& total) {
  static const std::regex file(R"(Processed file \[(\d+)/(\d+)\])"), image(R"(Matching image \[(\d+)/(\d+)\])"),
      block(R"(Matching block \[(\d+)/(\d+), (\d+)/(\d+)\])"), registering(R"(Registering image #\d+ \((\d+)\))");
  std::smatch m;
  if (std::regex_search(line, m, file) || std::regex_search(line, m, image)) {
    done = std::stoi(m[1]), total = std::stoi(m[2]);
    return true;
  }
  if (std::regex_search(line, m, block)) {  // blocks of i (rows) by j (columns): row-major
    const int rows = std::stoi(m[2]), cols = std::stoi(m[4]);
    done = (std::stoi(m[1]) - 1) * cols + std::stoi(m[3]), total = rows * cols;
    return true;
  }
  if (std::regex_search(line, m, registering)) {
    done = std::stoi(m[1]), total = 0;
    return true;
  }
  return false;
}

ColmapSteps::ColmapSteps(const std::string& colmap, const std::string& log_path, double max_seconds, bool quiet)
    : program_(find_program(colmap)), max_seconds_(max_seconds), quiet_(quiet), start_(Clock::now()) {
  if (program_.empty())
    throw Error(colmap,
                "COLMAP not found on PATH: install it (Debian/Ubuntu: sudo apt-get install colmap; scripts/setup.sh "
                "does) or pass --colmap /path/to/colmap");
  log_ = std::fopen(log_path.c_str(), "w");
  if (!log_) throw Error(log_path, std::string("cannot create the log (") + std::strerror(errno) + ")");
  ::setenv("QT_QPA_PLATFORM", "offscreen", 1);  // COLMAP links Qt: no display needed
}

ColmapSteps::~ColmapSteps() {
  if (log_) std::fclose(log_);
}

double ColmapSteps::seconds_left() const {
  if (max_seconds_ <= 0) return 0;
  const double left = max_seconds_ - seconds_since(start_);
  if (left <= 0)
    throw Error("--max-seconds", "COLMAP took longer than " + std::to_string(std::lround(max_seconds_)) +
                                     " s (stopped it; raise --max-seconds or use a smaller --max-size)");
  return left;
}

void ColmapSteps::run(const std::string& command, const std::vector<std::string>& args, const std::string& what,
                      int total) {
  std::vector<std::string> argv = {program_, command};
  argv.insert(argv.end(), args.begin(), args.end());
  std::fprintf(log_, "\n$ colmap %s\n", command.c_str());
  StepProgress progress(what, total, quiet_);
  std::string pending, tail;
  const auto on_output = [&](const std::string& chunk) {
    std::fwrite(chunk.data(), 1, chunk.size(), log_);
    pending += chunk;
    for (size_t end; (end = pending.find_first_of("\r\n")) != std::string::npos; pending.erase(0, end + 1))
      progress.line(pending.substr(0, end));
    tail = (tail + chunk).substr(tail.size() + chunk.size() > 4096 ? tail.size() + chunk.size() - 4096 : 0);
  };
  const double limit = seconds_left();
  int status = 0;
  try {
    status = run_program_streamed(argv, on_output, limit, "colmap " + command);
  } catch (const Error&) {
    std::fflush(log_);
    if (max_seconds_ > 0 && seconds_since(start_) >= max_seconds_ - 0.5) seconds_left();  // the --max-seconds line
    throw;
  }
  std::fflush(log_);
  if (status != 0)
    throw Error("colmap " + command, "failed (exit status " + std::to_string(status) +
                                         "); its last line: " + (last_line(tail).empty() ? "(none)" : last_line(tail)));
  progress.finished();
}

std::string ColmapSteps::run_captured(const std::string& command, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {program_, command};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string output;
  const int status = run_program_streamed(
      argv, [&](const std::string& chunk) { output += chunk; }, seconds_left(), "colmap " + command);
  std::fprintf(log_, "\n$ colmap %s\n%s", command.c_str(), output.c_str());
  std::fflush(log_);
  return status == 0 ? output : "";
}

}  // namespace lact
