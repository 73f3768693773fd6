#include "pipeline/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace lact {

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int wait_for(int pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// Starts argv with `stdin_fd` / `stdout_fd` (when >= 0) as its stdin / stdout; the parent's ends of the pipes
// (`close_in_child`) are closed in the child.
int spawn(const std::vector<std::string>& argv, int stdin_fd, int stdout_fd, const std::vector<int>& close_in_child) {
  if (argv.empty()) throw Error("internal: no program to run");
  const std::string program = find_program(argv[0]);
  if (program.empty()) throw Error(argv[0], "program not found (is it installed and on PATH?)");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  for (int fd : close_in_child) posix_spawn_file_actions_addclose(&actions, fd);
  std::vector<char*> args = c_argv(argv);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw Error(program, std::string("cannot start (") + std::strerror(error) + ")");
  return pid;
}

}  // namespace

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = dirs.substr(begin, end - begin);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return "";
}

int run_program(const std::vector<std::string>& argv, std::string* output) {
  if (!output) return wait_for(spawn(argv, -1, -1, {}));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(argv[0], "cannot create a pipe");
  int pid = -1;
  try {
    pid = spawn(argv, -1, fds[1], {fds[0]});
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output->append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  return wait_for(pid);
}

ProgramWithInput::ProgramWithInput(const std::vector<std::string>& argv) {
  // A reader that exits early must give EPIPE on write, not kill lact with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(argv.empty() ? "program" : argv[0], "cannot create a pipe");
  try {
    pid_ = spawn(argv, fds[0], -1, {fds[1]});
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[0]);
  stdin_fd_ = fds[1];
}

ProgramWithInput::~ProgramWithInput() {
  if (pid_ >= 0) finish();
}

bool ProgramWithInput::write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0 && stdin_fd_ >= 0) {
    const ssize_t n = ::write(stdin_fd_, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return stdin_fd_ >= 0;
}

int ProgramWithInput::finish() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
  const int status = pid_ >= 0 ? wait_for(pid_) : -1;
  pid_ = -1;
  return status;
}

}  // namespace lact
