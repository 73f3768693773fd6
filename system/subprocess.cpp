#include "system/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "system/error.h"
#include "system/signal_cleanup.h"

extern char** environ;

namespace lact {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kErrorTail = 4096;  // bytes of a program's stderr kept for the error line

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// Starting a child and registering it is one step for the signal cleanup (SignalsHeld): a signal meanwhile
// waits until the child is registered, so the cleanup never misses it.
using CleanupSignalsHeld = SignalsHeld;

// Reaps `pid`, which has exited or is about to, unregistering it first (a reaped pid may be reused).
int reap(int pid, int& token) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  // Stopped (and perhaps reaped) by the signal cleanup on its own thread: lact ends by the signal, not by an error.
  wait_if_ending();
  unregister_child(token);
  token = -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return decode_status(status);
}

// The exit status once `pid` has exited (reaped), without blocking; -2 while it runs.
int exit_status_if_done(int pid, int& token) {
  siginfo_t info{};
  int r;
  while ((r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT)) < 0 && errno == EINTR) {
  }
  if (r == 0 && info.si_pid == 0) return -2;
  return reap(pid, token);
}

// Kills the process group `pid` leads (and `pid` itself, should it have left the group) and reaps `pid`.
void kill_and_reap(int pid, int& token) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  reap(pid, token);
}

int milliseconds_until(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, 60'000));
}

// Appends what `fd` (non-blocking) has to `sink` until it would block or `sink` holds `max_bytes` (a program
// that writes faster than lact reads cannot make one piece grow without bound). Closes it and sets it to -1 at
// end of file.
void drain_some(int& fd, std::string& sink, size_t max_bytes) {
  char buffer[4096];
  while (fd >= 0 && sink.size() < max_bytes) {
    const ssize_t n = ::read(fd, buffer, std::min(sizeof buffer, max_bytes - sink.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      ::close(fd);
      fd = -1;
      break;
    }
    sink.append(buffer, static_cast<size_t>(n));
  }
}

// All that `fd` has, appended to `sink`, keeping its last `keep` bytes when `keep` > 0.
void drain(int& fd, std::string& sink, size_t keep = 0) {
  while (fd >= 0) {
    const size_t limit = sink.size() + 64 * 1024;
    drain_some(fd, sink, limit);
    const bool more = sink.size() >= limit;  // else it would block now, or it ended
    if (keep > 0 && sink.size() > keep) sink.erase(0, sink.size() - keep);
    if (!more) break;
  }
}

// A pipe whose ends are closed on exec (the child gets its end through dup2, which clears that).
void make_pipe(int fds[2], const std::string& program) {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(program, std::string("cannot create a pipe (") + std::strerror(errno) + ")");
}

void close_pipe(int fds[2]) {
  for (int i = 0; i < 2; ++i)
    if (fds[i] >= 0) ::close(fds[i]);
}

// posix_spawn of argv (spawn's common case); the errno, 0 when it started (then registered as `token`).
int posix_spawn_child(const std::string& program, char* const* args, const int (&stdio)[3],
                      const std::vector<int>& close_in_child, bool own_group, pid_t& pid, int& token) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int i = 0; i < 3; ++i)
    if (stdio[i] >= 0) posix_spawn_file_actions_adddup2(&actions, stdio[i], i);
  for (int fd : close_in_child) posix_spawn_file_actions_addclose(&actions, fd);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (own_group) {
    posix_spawnattr_setpgroup(&attributes, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attributes, flags);
  int error = 0;
  {
    CleanupSignalsHeld held;
    error = posix_spawn(&pid, program.c_str(), &actions, &attributes, args, environ);
    if (error == 0) token = register_child(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  return error;
}

// The child's side of fork_dying_with_parent, from fork to exec: only async-signal-safe calls (lact may have
// other threads, whose locks a forked child must not wait on). Errors go back as an errno on `report`.
[[noreturn]] void exec_child(const char* program, char* const* args, const int (&stdio)[3],
                             const std::vector<int>& close_in_child, bool own_group, pid_t parent, int report) {
  // Killed with SIGKILL when lact ends, however it ends; lact may have ended before the request was made.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  if (own_group) ::setpgid(0, 0);
  for (int i = 0; i < 3; ++i)
    if (stdio[i] == i ? ::fcntl(i, F_SETFD, 0) < 0 : stdio[i] >= 0 && ::dup2(stdio[i], i) < 0) ::_exit(127);
  for (int fd : close_in_child) ::close(fd);
  // lact's handlers (the signal cleanup) must never run in the child: every signal to its default before the
  // signals lact held while forking are let through. Ignored ones stay ignored (exec keeps them), SIGPIPE aside.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &current) != 0) continue;
    if (current.sa_handler == SIG_IGN && sig != SIGPIPE) continue;
    struct sigaction defaults {};
    defaults.sa_handler = SIG_DFL;
    ::sigaction(sig, &defaults, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(program, args, environ);
  const int error = errno;
  [[maybe_unused]] const ssize_t written = ::write(report, &error, sizeof error);
  ::_exit(127);
}

// fork + exec of a child that does not outlive lact, even when lact is killed with SIGKILL (posix_spawn cannot
// ask for PR_SET_PDEATHSIG). The death signal comes when the thread that forked ends: call it from the thread
// that waits for the child. Returns the pid, or -1 with `error` set.
pid_t fork_dying_with_parent(const std::string& program, char* const* args, const int (&stdio)[3],
                             const std::vector<int>& close_in_child, bool own_group, int& error) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return error = errno, -1;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(program.c_str(), args, stdio, close_in_child, own_group, parent, report[1]);
  error = pid < 0 ? errno : 0;
  ::close(report[1]);
  if (pid > 0) {
    if (own_group) ::setpgid(pid, pid);  // in the parent too: a kill of the group right after works
    ssize_t n;
    while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof error)) error = 0;  // closed by the exec: it runs
  }
  ::close(report[0]);
  if (pid > 0 && error != 0) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return -1;
  }
  return pid;
}

// Starts argv with `stdio` (when >= 0) as its standard streams, in a process group of its own when `own_group`,
// with SIGPIPE (which lact ignores) back to its default and no signal blocked; with `die_with_parent`, killed
// when lact ends (fork_dying_with_parent). The parent's ends of the pipes (`close_in_child`) are closed in the
// child. The child is registered (`token`) for the signal cleanup, with the signals held until it is.
int spawn(const std::vector<std::string>& argv, const int (&stdio)[3], const std::vector<int>& close_in_child,
          bool own_group, int& token, bool die_with_parent = false) {
  if (argv.empty()) throw Error("internal: no program to run");
  const std::string program = find_program(argv[0]);
  if (program.empty()) throw Error(argv[0], "program not found (is it installed and on PATH?)");
  std::vector<char*> args = c_argv(argv);
  pid_t pid = -1;
  int error = 0;
  if (die_with_parent) {
    CleanupSignalsHeld held;
    pid = fork_dying_with_parent(program, args.data(), stdio, close_in_child, own_group, error);
    if (pid > 0) token = register_child(pid);
  } else {
    error = posix_spawn_child(program, args.data(), stdio, close_in_child, own_group, pid, token);
  }
  if (error != 0) throw Error(program, std::string("cannot start (") + std::strerror(error) + ")");
  return pid;
}

// Reads the program's captured streams until both end, and waits for it; killed (Error) at `deadline` when
// `bounded`.
int collect(int pid, int& token, int (&fds)[2], std::string* (&sinks)[2], const std::string& name, bool bounded,
            Clock::time_point deadline, double timeout_s) {
  for (;;) {
    const bool open = fds[0] >= 0 || fds[1] >= 0;
    if (!open && !bounded) return reap(pid, token);
    const int status = open ? -2 : exit_status_if_done(pid, token);
    if (status != -2) return status;
    const bool late = bounded && Clock::now() >= deadline;
    pollfd polled[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    const int wait_ms = !open ? 20 : bounded ? std::min(milliseconds_until(deadline), 1000) : 1000;
    const int error = late || ::poll(polled, 2, wait_ms) >= 0 ? 0 : errno;
    if (late || (error != 0 && error != EINTR)) {
      kill_and_reap(pid, token);
      for (int& fd : fds) {
        if (fd >= 0) ::close(fd);
        fd = -1;
      }
      if (!late) throw Error(name, std::string("cannot read its output (") + std::strerror(error) + ")");
      throw Error(
          name, "did not finish within " + std::to_string(static_cast<int>(std::ceil(timeout_s))) + " s (stopped it)");
    }
    for (int i = 0; i < 2; ++i)
      if (polled[i].revents) drain(fds[i], *sinks[i]);
  }
}

// "90 s", "2.5 s", "30 min".
std::string seconds_text(double seconds) {
  char text[32];
  if (seconds >= 120 && std::fmod(seconds, 60) == 0)
    std::snprintf(text, sizeof text, "%.0f min", seconds / 60);
  else
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  return text;
}

// Reads a program's output streams (`fds`, -1 for none) piece by piece into `on_chunk(stream, piece)` until
// they close and it exits; returns its exit status. Killed at the limits (Error), or when `on_chunk` returns false
// (0 returned).
int pump(int pid, int& token, int (&fds)[2], const StreamLimits& limits, const std::string& what,
         const std::function<bool(int, const std::string&)>& on_chunk) {
  for (int fd : fds)
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  const auto stop = [&]() {
    kill_and_reap(pid, token);
    for (int& fd : fds)
      if (fd >= 0) ::close(fd), fd = -1;
  };
  const bool bounded = limits.timeout_s > 0, watched = limits.stall_s > 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(limits.timeout_s * 1000));
  const auto stall = std::chrono::milliseconds(static_cast<long long>(limits.stall_s * 1000));
  // `progressed` is asked a few times within the stall time, at most once a second.
  const auto look_every = std::min<Clock::duration>(std::chrono::seconds(1), stall / 4);
  auto last_activity = Clock::now(), next_look = Clock::now() + look_every;
  for (;;) {
    if (fds[0] < 0 && fds[1] < 0) {  // it closed its output: it has ended (or will soon; bounded all the same)
      const int status = exit_status_if_done(pid, token);
      if (status != -2) return status;
    }
    const auto now = Clock::now();
    if (watched && limits.progressed && now >= next_look) {
      if (limits.progressed()) last_activity = now;
      next_look = now + look_every;
    }
    if (bounded && now >= deadline) {
      stop();
      throw Error(what, "did not finish within " + std::to_string(static_cast<int>(std::ceil(limits.timeout_s))) +
                            " s (stopped it" + (limits.timeout_hint.empty() ? "" : "; " + limits.timeout_hint) + ")");
    }
    if (watched && now - last_activity >= stall) {
      stop();
      throw Error(what, "no output and no progress for " + seconds_text(limits.stall_s) + " (stopped it" +
                            (limits.stall_hint.empty() ? "" : "; " + limits.stall_hint) + ")");
    }
    pollfd polled[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};  // a closed stream (-1) is not polled
    const int wait_ms = fds[0] < 0 && fds[1] < 0 ? 20 : bounded ? std::min(milliseconds_until(deadline), 200) : 200;
    if (::poll(polled, 2, wait_ms) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (!polled[i].revents || fds[i] < 0) continue;
      std::string piece;
      drain_some(fds[i], piece, 64 * 1024);
      if (piece.empty()) continue;
      last_activity = Clock::now();
      if (!on_chunk(i, piece)) return stop(), 0;
    }
  }
}

}  // namespace

std::string first_output_line(const std::string& text, size_t limit) {
  const size_t begin = text.find_first_not_of("\r\n \t");
  if (begin == std::string::npos) return "";
  const size_t line_end = std::min(text.find_first_of("\r\n", begin), text.size());
  const size_t end = text.find_last_not_of(" \t", line_end - 1) + 1;
  return text.substr(begin, std::min(end - begin, limit));
}

std::string last_output_line(const std::string& text, size_t limit) {
  const size_t last = text.find_last_not_of("\r\n \t");
  if (last == std::string::npos) return "";
  const size_t before = text.find_last_of("\r\n", last);
  const size_t begin = before == std::string::npos ? 0 : before + 1;
  return text.substr(begin, std::min(last + 1 - begin, limit));
}

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

int run_program(const std::vector<std::string>& argv, std::string* output, double timeout_s, std::string* errors) {
  const std::string name = argv.empty() ? "program" : argv[0];
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  try {
    if (output) make_pipe(out_pipe, name);
    if (errors) make_pipe(err_pipe, name);
  } catch (...) {
    close_pipe(out_pipe);
    close_pipe(err_pipe);
    throw;
  }
  const bool bounded = timeout_s > 0;
  int pid = -1, token = -1;
  try {
    pid = spawn(argv, {-1, out_pipe[1], err_pipe[1]}, {out_pipe[0], err_pipe[0]}, bounded, token);
  } catch (...) {
    close_pipe(out_pipe);
    close_pipe(err_pipe);
    throw;
  }
  for (int* p : {out_pipe, err_pipe})
    if (p[1] >= 0) ::close(p[1]);
  for (int fd : {out_pipe[0], err_pipe[0]})
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  int fds[2] = {out_pipe[0], err_pipe[0]};
  std::string ignored;
  std::string* sinks[2] = {output ? output : &ignored, errors ? errors : &ignored};
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  return collect(pid, token, fds, sinks, name, bounded, deadline, timeout_s);
}

int run_program_streamed(const std::vector<std::string>& argv, const std::function<void(const std::string&)>& on_output,
                         const StreamLimits& limits, const std::string& what) {
  int out_pipe[2] = {-1, -1}, pid = -1, token = -1;
  make_pipe(out_pipe, what);
  try {
    pid = spawn(argv, {-1, out_pipe[1], out_pipe[1]}, {out_pipe[0]}, true, token, true);
  } catch (...) {
    close_pipe(out_pipe);
    throw;
  }
  ::close(out_pipe[1]);
  int fds[2] = {out_pipe[0], -1};
  return pump(pid, token, fds, limits, what, [&](int, const std::string& chunk) {
    on_output(chunk);
    return true;
  });
}

int run_program_piped(const std::vector<std::string>& argv, const std::function<bool(const std::string&)>& on_output,
                      std::string& errors, const StreamLimits& limits, const std::string& what) {
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, pid = -1, token = -1;
  try {
    make_pipe(out_pipe, what);
    make_pipe(err_pipe, what);
    pid = spawn(argv, {-1, out_pipe[1], err_pipe[1]}, {out_pipe[0], err_pipe[0]}, true, token, true);
  } catch (...) {
    close_pipe(out_pipe);
    close_pipe(err_pipe);
    throw;
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int fds[2] = {out_pipe[0], err_pipe[0]};
  return pump(pid, token, fds, limits, what, [&](int stream, const std::string& chunk) {
    if (stream == 0) return on_output(chunk);
    errors.append(chunk);
    if (errors.size() > kErrorTail) errors.erase(0, errors.size() - kErrorTail);
    return true;
  });
}

ProgramWithInput::ProgramWithInput(const std::vector<std::string>& argv, double stall_timeout_s)
    : stall_timeout_s_(stall_timeout_s) {
  // A reader that exits early must give EPIPE on write, not kill lact with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  const std::string name = argv.empty() ? "program" : argv[0];
  int in_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  try {
    make_pipe(in_pipe, name);
    make_pipe(err_pipe, name);
    pid_ = spawn(argv, {in_pipe[0], -1, err_pipe[1]}, {in_pipe[1], err_pipe[0]}, true, child_token_);
  } catch (...) {
    close_pipe(in_pipe);
    close_pipe(err_pipe);
    throw;
  }
  ::close(in_pipe[0]);
  ::close(err_pipe[1]);
  stdin_fd_ = in_pipe[1];
  stderr_fd_ = err_pipe[0];
  for (int fd : {stdin_fd_, stderr_fd_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

ProgramWithInput::~ProgramWithInput() { stop(); }

void ProgramWithInput::read_errors() { drain(stderr_fd_, errors_, kErrorTail); }

bool ProgramWithInput::write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  const auto stall = std::chrono::milliseconds(static_cast<long long>(stall_timeout_s_ * 1000));
  auto deadline = Clock::now() + stall;
  while (size > 0) {
    if (stdin_fd_ < 0 || pid_ < 0) return false;
    pollfd polled[2] = {{stdin_fd_, POLLOUT, 0}, {stderr_fd_, POLLIN, 0}};
    const int ready = ::poll(polled, 2, milliseconds_until(deadline));
    if (ready < 0 && errno != EINTR) return false;
    if (polled[1].revents) read_errors();
    if (polled[0].revents == 0 && Clock::now() >= deadline) {  // however much it writes to stderr meanwhile
      stalled_ = true;
      stop();
      return false;
    }
    if (polled[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return false;  // it closed its stdin
    if (!(polled[0].revents & POLLOUT)) continue;
    const ssize_t n = ::write(stdin_fd_, bytes, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
    deadline = Clock::now() + stall;
  }
  return true;
}

int ProgramWithInput::finish(const std::function<bool()>& progressed) {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
  if (pid_ < 0) return -1;
  const auto stall = std::chrono::milliseconds(static_cast<long long>(stall_timeout_s_ * 1000));
  auto deadline = Clock::now() + stall;
  for (;;) {
    const int status = exit_status_if_done(pid_, child_token_);
    if (status != -2) {
      pid_ = -1;
      read_errors();
      return status;
    }
    if (progressed && progressed()) deadline = Clock::now() + stall;
    if (Clock::now() >= deadline) {
      stalled_ = true;
      stop();
      return -1;
    }
    pollfd polled = {stderr_fd_, POLLIN, 0};  // a closed stream (-1) makes this a 20 ms sleep
    if (::poll(&polled, 1, 20) > 0) read_errors();
  }
}

void ProgramWithInput::stop() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
  if (pid_ >= 0) kill_and_reap(pid_, child_token_);
  pid_ = -1;
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
  stderr_fd_ = -1;
}

std::string ProgramWithInput::last_error_line() const { return last_output_line(errors_, 300); }

}  // namespace lact
