// Running another program (ffmpeg, ffprobe, python) without a shell: the argument vector goes to execve as it
// is, so no byte of a path or flag is ever interpreted (quotes, `;`, `$()` are just characters of a file name).
// Every wait can be bounded: a program that stops reading, or never ends, is killed rather than waited for.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lact {

// The first / the last line of a program's output that holds more than whitespace, without its trailing
// whitespace and cut to `limit` bytes (an error message quotes one line of what the program said); "" if none.
std::string first_output_line(const std::string& text, size_t limit = 200);
std::string last_output_line(const std::string& text, size_t limit = 200);

// The program's full path from PATH (or `name` itself when it holds a '/' and is executable); empty if none.
std::string find_program(const std::string& name);

// Runs argv and waits; returns its exit status (128 + signal when killed). Its stdout is captured into
// `output` and its stderr into `errors` when given, else inherited. With `timeout_s` > 0 a program still
// running after that long is killed and Error (naming it) is thrown. Throws Error when it cannot start.
int run_program(const std::vector<std::string>& argv, std::string* output = nullptr, double timeout_s = 0,
                std::string* errors = nullptr);

// The bounds on a program whose output is read as it comes.
struct StreamLimits {
  double timeout_s = 0;  // in all (0: none); Error "WHAT: did not finish within N s (stopped it; HINT)"
  double stall_s = 0;    // without a byte of output and without `progressed` saying so (0: none); Error "WHAT: no
                         // output and no progress for N s (stopped it; HINT)"
  std::function<bool()> progressed;  // asked about once a second whether the program got on (a file grew)
  std::string timeout_hint, stall_hint;
};

// Runs argv in a process group of its own with its stdout and stderr on one pipe, handing each piece of output
// (at most 64 KiB) to `on_output` as it arrives (a long program's progress: COLMAP's). Past a limit it is killed
// (with whatever it started) and Error naming `what` is thrown. It dies with lact, even when lact is killed with
// SIGKILL (PR_SET_PDEATHSIG). Returns its exit status.
int run_program_streamed(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_output,
                         const StreamLimits& limits, const std::string& what);

// Runs argv in a process group of its own, handing its stdout to `on_output` piece by piece (at most 64 KiB) and
// keeping the last 4 KiB of its stderr in `errors`. `on_output` returning false stops it (killed; 0 returned: the
// caller has what it wanted). Limits and the death with lact as for run_program_streamed. Returns its exit status.
int run_program_piped(const std::vector<std::string>& argv, const std::function<bool(const std::string&)>& on_output,
                      std::string& errors, const StreamLimits& limits, const std::string& what);

// A program started with its stdin connected to us (ffmpeg reading raw video frames) and its stderr captured
// (never printed: it may hold anything, terminal escapes included). It runs in a process group of its own, so
// stopping it also stops whatever it started (a wrapper script's children).
class ProgramWithInput {
 public:
  // `stall_timeout_s`: write() and finish() stop the program after this long without progress.
  ProgramWithInput(const std::vector<std::string>& argv, double stall_timeout_s);  // Error when it cannot start
  ~ProgramWithInput();  // stop() when finish() was not called
  ProgramWithInput(const ProgramWithInput&) = delete;
  ProgramWithInput& operator=(const ProgramWithInput&) = delete;

  // False once the program stopped reading (it exited or failed) or took none of the bytes for the stall
  // timeout (then it is stopped and stalled() is true).
  bool write(const void* data, size_t size);
  // Closes its stdin and waits for it to exit: its exit status (128 + signal when killed). It is stopped
  // (stalled() true, -1 returned) when it has not exited after the stall timeout; each call of `progressed`
  // that returns true (the output file grew) starts that timeout again.
  int finish(const std::function<bool()>& progressed = {});
  // Kills the program's process group and waits for it (nothing when it has already been waited for).
  void stop();

  bool stalled() const { return stalled_; }
  int pid() const { return pid_; }
  // The last non-empty line it wrote to stderr (raw: quote it only through the error line's sanitiser).
  std::string last_error_line() const;

 private:
  void read_errors();
  int pid_ = -1, child_token_ = -1, stdin_fd_ = -1, stderr_fd_ = -1;
  double stall_timeout_s_;
  bool stalled_ = false;
  std::string errors_;  // the tail of its stderr
};

}  // namespace lact
