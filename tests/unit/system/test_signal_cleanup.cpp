// SignalsHeld (system/signal_cleanup.h) with a terminating signal sent into the exact window it covers. Each case
// runs in a child process: the child installs the signal cleanup, registers a temporary, and sends itself the
// signal inside a held section; the parent sees how the child ended (waitpid: killed by that signal, as a shell
// sees 128 + sig) and what it left on disk. That the handler has run (and deferred) before the section goes on is
// read from /proc, not hoped for after a sleep: the signal has left the process's pending set (ShdPnd) and, after
// that, the one thread that receives the signals is back asleep in pause().
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "system/signal_cleanup.h"

namespace lact {
namespace {

// How a child that did not end as expected exits (the parent names them in its failure).
constexpr int kChildWentOn = 3;  // it outlived the section that should have ended it
constexpr int kChildFailed = 4;  // a step of the test itself failed (a file, a pipe, /proc, a wait)

const char* const kSectionText = "written whole, after the signal arrived";

// A bound on each wait of the child, so that a broken cleanup fails the test rather than hangs it.
bool past(const struct timespec& start, int seconds) {
  struct timespec now;
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec - start.tv_sec > seconds;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::string read_file(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

// Writes `text` to `path` whole: to a side name first, then renamed (the name appears with all of it or not at all).
void write_whole(const std::string& path, const std::string& text) {
  const std::string partial = path + ".part";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) ::_exit(kChildFailed);
  ::close(fd);
  if (::rename(partial.c_str(), path.c_str()) != 0) ::_exit(kChildFailed);
}

uint64_t signal_bit(int sig) { return uint64_t(1) << (sig - 1); }

// The hexadecimal mask after `key` ("ShdPnd:", "SigBlk:") in a /proc status file.
uint64_t status_mask(const std::string& status_path, const char* key) {
  const std::string status = read_file(status_path);
  const size_t at = status.find(key);
  if (at == std::string::npos) ::_exit(kChildFailed);
  return std::strtoull(status.c_str() + at + std::strlen(key), nullptr, 16);
}

// The thread of this process that takes `sig` (the one that does not block it), or 0.
pid_t receiving_thread(int sig) {
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return 0;
  pid_t found = 0;
  while (const struct dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string status = std::string("/proc/self/task/") + entry->d_name + "/status";
    if ((status_mask(status, "SigBlk:") & signal_bit(sig)) == 0) found = std::atoi(entry->d_name);
  }
  ::closedir(tasks);
  return found;
}

// Whether thread `tid` of this process is asleep in pause() (the first field of its /proc syscall file). Only
// system calls and no allocation: it also runs inside the signal cleanup (the step of the last case).
bool asleep_in_pause(pid_t tid) {
#ifdef SYS_pause
  const long pause_call = SYS_pause;
#else
  const long pause_call = SYS_ppoll;  // glibc's pause() where the kernel has no pause call
#endif
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char line[256] = {};
  const ssize_t n = ::read(fd, line, sizeof line - 1);
  ::close(fd);
  if (n <= 0 || line[0] < '0' || line[0] > '9') return false;  // "running", or not in a system call
  return std::strtol(line, nullptr, 10) == pause_call;
}

// Sends `sig` to this process (to be taken by the receiving thread, as a `kill` from outside is) and returns once
// the handler has run to its end there.
void send_and_wait_until_handled(int sig) {
  struct timespec start;
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  pid_t receiver = 0;
  while ((receiver = receiving_thread(sig)) == 0)  // it may not have unblocked them yet
    if (past(start, 30)) ::_exit(kChildFailed);
  while (!asleep_in_pause(receiver))
    if (past(start, 30)) ::_exit(kChildFailed);
  if (::kill(::getpid(), sig) != 0) ::_exit(kChildFailed);
  while (status_mask("/proc/self/status", "ShdPnd:") & signal_bit(sig))  // taken by the receiver
    if (past(start, 30)) ::_exit(kChildFailed);
  while (!asleep_in_pause(receiver))  // and its handler returned
    if (past(start, 30)) ::_exit(kChildFailed);
}

// A folder of the test's own, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/lact-signal-cleanup-XXXXXX";
    path = ::mkdtemp(pattern) ? pattern : "";
  }
  ~TempDir() {
    if (!path.empty()) std::system(("rm -rf '" + path + "'").c_str());
  }
};

// Runs `body` in a child process that starts as lact does: the three signals at their default actions and
// unblocked (whatever the test runner left), then install_signal_cleanup. Returns the child's wait status.
int run_in_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    sigset_t terminating;
    sigemptyset(&terminating);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      ::signal(sig, SIG_DFL);
      sigaddset(&terminating, sig);
    }
    ::pthread_sigmask(SIG_UNBLOCK, &terminating, nullptr);
    install_signal_cleanup();
    body();
    ::_exit(kChildWentOn);
  }
  int status = 0;
  for (int waited = 0; pid > 0 && ::waitpid(pid, &status, WNOHANG) == 0; ++waited) {
    if (waited == 60 * 100) {  // a hung child: the test fails rather than hangs
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    ::usleep(10 * 1000);
  }
  return status;
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildWentOn) return "went on past the section";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildFailed) return "a step of the test failed (file, /proc, wait)";
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  return "status " + std::to_string(status);
}

// A temporary registered with the cleanup and created, as lact's writers do.
std::string make_registered_temporary(const std::string& folder) {
  const std::string path = folder + "/.state.tmp-1";
  if (register_temporary(path) < 0) ::_exit(kChildFailed);
  write_whole(path, "partial");
  return path;
}

TEST(SignalCleanup, HeldSectionWithoutASignalGoesOn) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const int status = run_in_child([&] {
    make_registered_temporary(dir.path);
    { const SignalsHeld held; }
    ::_exit(0);
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe(status);
  EXPECT_TRUE(exists(dir.path + "/.state.tmp-1"));  // no signal: nothing was cleaned up
}

// The signal arrives inside the section: the section completes (its file whole), and leaving it ends the process
// by that signal, with the temporary removed.
TEST(SignalCleanup, SignalInsideAHeldSectionEndsTheProcessWhenItIsLeft) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    SCOPED_TRACE("signal " + std::to_string(sig));
    TempDir dir;
    ASSERT_FALSE(dir.path.empty());
    const int status = run_in_child([&] {
      make_registered_temporary(dir.path);
      {
        const SignalsHeld held;
        send_and_wait_until_handled(sig);
        write_whole(dir.path + "/section", kSectionText);
      }
      write_whole(dir.path + "/after", "went on");
    });
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << describe(status);
    EXPECT_EQ(read_file(dir.path + "/section"), kSectionText);
    EXPECT_FALSE(exists(dir.path + "/after"));
    EXPECT_FALSE(exists(dir.path + "/.state.tmp-1"));
  }
}

// One byte through a pipe: a step of one thread that another waits for.
struct Gate {
  int fds[2] = {-1, -1};
  Gate() {
    if (::pipe(fds) != 0) ::_exit(kChildFailed);
  }
  void open_it() const {
    if (::write(fds[1], "x", 1) != 1) ::_exit(kChildFailed);
  }
  void wait() const {
    char byte;
    if (::read(fds[0], &byte, 1) != 1) ::_exit(kChildFailed);
  }
};

// Two holders on two threads: the signal, sent while both hold, ends the process when the last one leaves.
TEST(SignalCleanup, NestedHoldersOnTwoThreadsEndWhenTheLastLeaves) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const int status = run_in_child([&] {
    make_registered_temporary(dir.path);
    const Gate second_holds, second_may_leave;
    std::thread second([&] {
      {
        const SignalsHeld held;
        second_holds.open_it();
        second_may_leave.wait();
        write_whole(dir.path + "/second", kSectionText);
      }
      write_whole(dir.path + "/after_second", "went on");
      ::_exit(kChildWentOn);
    });
    {
      const SignalsHeld held;
      second_holds.wait();
      send_and_wait_until_handled(SIGTERM);
    }
    write_whole(dir.path + "/after_first", "alive: the second still holds");
    second_may_leave.open_it();
    second.join();  // the process ends while it waits here
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << describe(status);
  EXPECT_TRUE(exists(dir.path + "/after_first"));
  EXPECT_EQ(read_file(dir.path + "/second"), kSectionText);
  EXPECT_FALSE(exists(dir.path + "/after_second"));
  EXPECT_FALSE(exists(dir.path + "/.state.tmp-1"));
}

// The last case's threads, for its cleanup step (a plain function: the cleanup takes no context).
std::string late_folder;
std::atomic<pid_t> late_thread{0};
int late_may_start = -1;  // the write end of a pipe the late holder waits on

// Runs inside the cleanup, once the end has begun: lets the late thread make its SignalsHeld, and returns once
// that thread waits for the end (asleep in pause) or went into its section (its "entered" file).
void let_the_late_holder_try() {
  if (::write(late_may_start, "x", 1) != 1) return;
  const std::string entered = late_folder + "/entered";
  const struct timespec tick = {0, 1000 * 1000};
  struct timespec start;
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  while (!asleep_in_pause(late_thread.load()) && !exists(entered)) {
    if (past(start, 30)) return write_whole(late_folder + "/step_gave_up", "");
    ::nanosleep(&tick, nullptr);
  }
}

// A holder made after the signal already ends the process never enters its section: what it would start, the
// cleanup under way would miss. The process ends by the signal.
TEST(SignalCleanup, HolderMadeAfterTheEndBeganWaitsForTheEnd) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  late_folder = dir.path;
  const int status = run_in_child([&] {
    make_registered_temporary(dir.path);
    const Gate may_start, never;
    late_may_start = may_start.fds[1];
    std::thread late([&] {
      late_thread.store(static_cast<pid_t>(::syscall(SYS_gettid)));
      may_start.wait();
      const SignalsHeld held;
      write_whole(dir.path + "/entered", "a section begun during the end");
      never.wait();
    });
    while (late_thread.load() == 0) ::sched_yield();
    set_signal_cleanup_step(let_the_late_holder_try);
    if (::kill(::getpid(), SIGTERM) != 0) ::_exit(kChildFailed);
    late.join();  // the process ends while it waits here
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << describe(status);
  EXPECT_FALSE(exists(dir.path + "/entered"));
  EXPECT_FALSE(exists(dir.path + "/step_gave_up"));
  EXPECT_FALSE(exists(dir.path + "/.state.tmp-1"));
}

}  // namespace
}  // namespace lact
