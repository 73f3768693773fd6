// Running another program (ffmpeg, python) without a shell: the argument vector goes to execve as it is, so no
// byte of a path or flag is ever interpreted (quotes, `;`, `$()` are just characters of a file name).
#pragma once

#include <string>
#include <vector>

namespace lact {

// The program's full path from PATH (or `name` itself when it holds a '/' and is executable); empty if none.
std::string find_program(const std::string& name);

// Runs argv and waits; returns its exit status (128 + signal when killed). Its stdout is captured into
// `output` when given, else inherited. Throws Error when it cannot start.
int run_program(const std::vector<std::string>& argv, std::string* output = nullptr);

// A program started with its stdin connected to us (ffmpeg reading raw video frames).
class ProgramWithInput {
 public:
  explicit ProgramWithInput(const std::vector<std::string>& argv);  // throws Error when it cannot start
  ~ProgramWithInput();  // closes the pipe and waits (when finish() was not called)
  ProgramWithInput(const ProgramWithInput&) = delete;
  ProgramWithInput& operator=(const ProgramWithInput&) = delete;

  // False once the program stopped reading (it exited or failed).
  bool write(const void* data, size_t size);
  // Closes its stdin and waits: the exit status (128 + signal when killed).
  int finish();

 private:
  int pid_ = -1, stdin_fd_ = -1;
};

}  // namespace lact
