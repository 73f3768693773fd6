#include "import/colmap_steps.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "system/clock.h"
#include "system/error.h"
#include "system/subprocess.h"

namespace lact {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxLogBytes = uint64_t{64}
                                  << 20;  // of one step's output in colmap.log: a flood cannot fill the disk

constexpr int kMaxDigits = 9;  // a count below 10^9: an int, and no scan of a 200,000-digit "number"

// The count of 1 to 9 digits at `at` (a 10th digit refuses it), `at` moved past it.
bool read_count(const std::string& line, size_t& at, long long& value) {
  size_t end = at;
  while (end < line.size() && end - at <= kMaxDigits && line[end] >= '0' && line[end] <= '9') ++end;
  if (end == at || end - at > kMaxDigits) return false;
  value = 0;
  for (; at < end; ++at) value = value * 10 + (line[at] - '0');
  return true;
}

// Whether `line` at `at` reads as `pattern`, literal text in which each '%' stands for a count (into `counts`).
bool matches_at(const std::string& line, size_t at, const char* pattern, std::vector<long long>& counts) {
  counts.clear();
  for (const char* p = pattern; *p; ++p) {
    long long value = 0;
    if (*p == '%') {
      if (!read_count(line, at, value)) return false;
      counts.push_back(value);
    } else if (at >= line.size() || line[at++] != *p) {
      return false;
    }
  }
  return true;
}

// Whether `pattern` occurs anywhere in `line` (the first occurrence that reads whole fills `counts`).
bool find_pattern(const std::string& line, const char* pattern, std::vector<long long>& counts) {
  const std::string head(pattern, std::strchr(pattern, '%') - pattern);  // the literal text before the first count
  for (size_t at = line.find(head); at != std::string::npos; at = line.find(head, at + 1))
    if (matches_at(line, at, pattern, counts)) return true;
  return false;
}

}  // namespace

std::string StepProgress::line(const std::string& text) {
  int done = 0, total = 0;
  if (!parse_colmap_progress(text, done, total)) return "";
  if (total == 0) total = total_;
  // The mapper's count is the size of the model it is growing, which starts again at 2 for each new model
  // (and a failed initial pair): the line reports the most reached so far, so it never goes back.
  done = most_ = std::max(most_, done);
  if (total <= 0 || done <= 0 || seconds_since(last_) < interval_s_) return "";
  last_ = Clock::now();
  const double elapsed = seconds_since(start_), eta = elapsed / done * std::max(0, total - done);
  char shown[160];
  std::snprintf(shown, sizeof shown, "lact import: %s %d/%d, %.0f s, ETA %.0f s\n", what_.c_str(),
                std::min(done, total), total, elapsed, eta);
  if (!quiet_) std::fputs(shown, stderr);
  return shown;
}

void StepProgress::finished() const {
  if (!quiet_) std::fprintf(stderr, "lact import: %s done in %.1f s\n", what_.c_str(), seconds_since(start_));
}

std::string colmap_failure_cause(const std::string& line) {
  struct Known {
    const char* said;
    const char* meaning;
  };
  static const Known known[] = {
      {"No good initial image pair found", "COLMAP found no pair of photos to start the model from"},
      {"No images with matches found", "COLMAP matched no two photos"},
      {"Discarding reconstruction due to insufficient size", "every model COLMAP began was too small to keep"},
  };
  for (const Known& k : known)
    if (line.find(k.said) != std::string::npos)
      return std::string(k.meaning) + " ('" + k.said + "'). " + kColmapUsualCauses;
  return "";
}

std::string colmap_storage_error(const std::string& line) {
  // SQLite's messages for a write that did not reach the disk; COLMAP logs them and goes on.
  static const char* const said[] = {"disk I/O error", "database or disk is full", "No space left on device",
                                     "attempt to write a readonly database", "unable to open database file"};
  if (line.find("SQLite error") == std::string::npos) return "";
  for (const char* s : said)
    if (line.find(s) != std::string::npos) return s;
  return "";
}

bool parse_colmap_progress(const std::string& line, int& done, int& total) {
  std::vector<long long> c;
  if (find_pattern(line, "Processed file [%/%]", c) || find_pattern(line, "Matching image [%/%]", c)) {
    done = static_cast<int>(c[0]), total = static_cast<int>(c[1]);
    return true;
  }
  if (find_pattern(line, "Matching block [%/%, %/%]", c)) {  // blocks of i (rows) by j (columns): row-major
    const long long blocks = c[1] * c[3], block = (c[0] - 1) * c[3] + c[2];
    if (c[0] < 1 || blocks > 1'000'000'000 || block > 1'000'000'000) return false;
    done = static_cast<int>(block), total = static_cast<int>(blocks);
    return true;
  }
  if (find_pattern(line, "Registering image #% (%)", c)) {
    done = static_cast<int>(c[1]), total = 0;
    return true;
  }
  return false;
}

void OutputLines::feed(const char* data, size_t size) {
  const char* const end = data + size;
  while (data < end) {
    const char* line_end = std::find_if(data, end, [](char c) { return c == '\n' || c == '\r'; });
    const size_t length = static_cast<size_t>(line_end - data), room = max_line_ - line_.size();
    if (!cut_) line_.append(data, std::min(length, room));
    cut_ = cut_ || length > room;
    if (line_end == end) return;
    on_line_(line_);
    line_.clear();
    cut_ = false;
    data = line_end + 1;
  }
}

void OutputLines::finish() {
  if (!line_.empty()) on_line_(line_);
  line_.clear();
  cut_ = false;
}

std::string find_colmap(const std::string& colmap) {
  if (colmap.find('/') != std::string::npos) {  // a path: it is the program, or an error naming it
    std::error_code ec;
    const auto status = std::filesystem::status(colmap, ec);
    if (!std::filesystem::exists(status))
      throw Error("--colmap", colmap + ": no such file (name the colmap program, or leave --colmap out to use PATH's)");
    if (std::filesystem::is_directory(status))
      throw Error("--colmap", colmap + ": is a folder (name the colmap program itself)");
    if (find_program(colmap).empty()) throw Error("--colmap", colmap + ": is not executable (name the colmap program)");
    return colmap;
  }
  const std::string program = find_program(colmap);
  if (program.empty())
    throw Error(colmap,
                "COLMAP not found on PATH: install it (Debian/Ubuntu: sudo apt-get install colmap; scripts/setup.sh "
                "does) or pass --colmap /path/to/colmap");
  return program;
}

ColmapSteps::ColmapSteps(const std::string& colmap, const std::string& log_path, double max_seconds,
                         double stall_seconds, std::string database, bool quiet)
    : program_(find_colmap(colmap)),
      max_seconds_(max_seconds),
      stall_seconds_(stall_seconds),
      database_(std::move(database)),
      quiet_(quiet),
      start_(Clock::now()) {
  log_ = std::fopen(log_path.c_str(), "w");
  if (!log_) throw Error(log_path, std::string("cannot create the log (") + std::strerror(errno) + ")");
  ::setenv("QT_QPA_PLATFORM", "offscreen", 1);  // COLMAP links Qt: no display needed
  ::setenv("GLOG_logtostderr", "1", 1);         // no glog files in /tmp (--log_to_stderr says it too)
}

ColmapSteps::~ColmapSteps() {
  if (log_) std::fclose(log_);
}

double ColmapSteps::seconds_left() const {
  if (max_seconds_ <= 0) return 0;
  const double left = max_seconds_ - seconds_since(start_);
  if (left <= 0)
    throw Error("--max-seconds", "COLMAP took longer than " + std::to_string(std::lround(max_seconds_)) +
                                     " s (stopped it; raise --max-seconds or use a smaller --colmap-size)");
  return left;
}

void ColmapSteps::log(const std::string& text) {
  std::fputs(text.c_str(), log_);
  std::fflush(log_);
}

StreamLimits ColmapSteps::limits() const {
  StreamLimits limits;
  limits.timeout_s = seconds_left();
  limits.timeout_hint = "--max-seconds sets the limit";
  limits.stall_s = stall_seconds_;
  limits.stall_hint = "--stall-minutes sets the limit";
  // COLMAP may work quietly for a while (a large bundle adjustment): its database growing is progress too.
  limits.progressed = [database = database_, size = off_t{-1}]() mutable {
    struct stat info {};
    const off_t now = ::stat(database.c_str(), &info) == 0 ? info.st_size : -1;
    const bool grew = now != size;
    size = now;
    return grew;
  };
  return limits;
}

int ColmapSteps::run_logged(const std::vector<std::string>& argv, const std::string& command,
                            const std::function<void(const std::string&)>& on_line, std::string& tail) {
  std::fprintf(log_, "\n$ colmap %s\n", command.c_str());
  OutputLines lines(on_line);
  uint64_t bytes = 0;  // of this step's output; the log keeps the first kMaxLogBytes
  const auto on_output = [&](const std::string& chunk) {
    if (bytes < kMaxLogBytes)
      std::fwrite(chunk.data(), 1, std::min<uint64_t>(chunk.size(), kMaxLogBytes - bytes), log_);
    bytes += chunk.size();
    lines.feed(chunk.data(), chunk.size());
    tail.append(chunk);
    if (tail.size() > 4096) tail.erase(0, tail.size() - 4096);
  };
  try {
    const int status = run_program_streamed(argv, on_output, limits(), "colmap " + command);
    lines.finish();
    if (bytes > kMaxLogBytes)
      std::fprintf(log_, "\n[lact: %llu more bytes of this step's output not kept]\n",
                   static_cast<unsigned long long>(bytes - kMaxLogBytes));
    std::fflush(log_);
    return status;
  } catch (const Error&) {
    std::fflush(log_);
    if (max_seconds_ > 0 && seconds_since(start_) >= max_seconds_ - 0.5) seconds_left();  // the --max-seconds line
    throw;
  }
}

void ColmapSteps::run(const std::string& command, const std::vector<std::string>& args, const std::string& what,
                      int total) {
  std::vector<std::string> argv = {program_, command};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--log_to_stderr", "1"});  // glog's files would go to /tmp: its lines go to the log
  StepProgress progress(what, total, quiet_);
  std::string tail, cause, storage;
  const int status = run_logged(
      argv, command,
      [&](const std::string& line) {
        progress.line(line);
        if (cause.empty()) cause = colmap_failure_cause(line);
        if (storage.empty()) storage = colmap_storage_error(line);
      },
      tail);
  // Its database lost writes: what follows (few images registered, no matches) would be blamed on the photos.
  if (!storage.empty())
    throw Error("colmap " + command, "could not write its database (SQLite: " + storage +
                                         "): is the disk full, or a file size limit (ulimit -f) set?");
  const std::string last = last_output_line(tail);
  if (status != 0)
    throw Error("colmap " + command, "failed (exit status " + std::to_string(status) + "); its last line: " +
                                         (last.empty() ? "(none)" : last) + (cause.empty() ? "" : ". " + cause));
  progress.finished();
}

std::string ColmapSteps::run_for_line(const std::string& command, const std::vector<std::string>& args,
                                      const std::string& prefix) {
  std::vector<std::string> argv = {program_, command};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--log_to_stderr", "1"});
  std::string found, tail;
  bool seen = false;
  const auto on_line = [&](const std::string& line) {
    const size_t at = line.find(prefix);
    if (seen || at == std::string::npos) return;
    seen = true;
    found = line.substr(at + prefix.size());
  };
  return run_logged(argv, command, on_line, tail) == 0 ? found : "";
}

}  // namespace lact
