#include "system/signal_cleanup.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace lact {

namespace {

// A slot is free (0), being filled by register_*() (1) or ready for the handler (2).
enum : int { kFree = 0, kFilling = 1, kReady = 2 };
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs lock-free atomics");

constexpr int kTemporaries = 256;  // about 1 MiB of zeroed static memory, touched only where used
constexpr int kChildren = 64;

struct TemporarySlot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
struct ChildSlot {
  std::atomic<int> state{kFree};
  pid_t pid = -1;
};

TemporarySlot temporaries[kTemporaries];
ChildSlot children[kChildren];

template <typename Slot, int N>
int claim_slot(Slot (&slots)[N]) {
  for (int i = 0; i < N; ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kFilling)) return i;
  }
  return -1;
}

// Stops every registered child: SIGKILL to it and to the group it may lead, then reaps it, waiting at most
// about two seconds in all (a child stuck in the kernel must not keep lact from ending).
void stop_children() {
  for (ChildSlot& slot : children)
    if (slot.state.load() == kReady) {
      ::kill(-slot.pid, SIGKILL);  // ESRCH when it leads no group: harmless
      ::kill(slot.pid, SIGKILL);
    }
  const struct timespec tick = {0, 10 * 1000 * 1000};
  for (ChildSlot& slot : children) {
    if (slot.state.load() != kReady) continue;
    for (int waited = 0; waited < 200; ++waited) {
      const pid_t r = ::waitpid(slot.pid, nullptr, WNOHANG);
      if (r != 0) break;  // reaped, or not ours to wait for (already reaped elsewhere)
      ::nanosleep(&tick, nullptr);
    }
  }
}

// The interrupt note, in two buffers so the handler never reads the one being written: set_interrupt_note fills
// the buffer not published, then publishes it.
constexpr int kNoteBytes = 1024;
char notes[2][kNoteBytes];
std::atomic<int> published_note{-1};  // -1: no note

void write_interrupt_note() {
  const int i = published_note.load();
  if (i < 0) return;
  const size_t length = ::strnlen(notes[i], kNoteBytes);
  for (size_t written = 0; written < length;) {
    const ssize_t n = ::write(STDERR_FILENO, notes[i] + written, length - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
}

void remove_temporaries() {
  for (TemporarySlot& slot : temporaries)
    if (slot.state.load() == kReady) ::unlink(slot.path);
}

// The signal being handled (0: none). While the handler stops the children, another thread may see a pipe to
// one of them break and end lact the ordinary way (exit 1, or a sanitizer's exit code): the atexit hook below
// holds such an exit until the handler ends lact by the signal.
std::atomic<int> terminating_signal{0};

void hold_exit_while_terminating() {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  while (terminating_signal.load() != 0) ::nanosleep(&tick, nullptr);
}

// SignalsHeld: while held, the first terminating signal is kept here for the destructor to deliver.
std::atomic<bool> signals_held{false};
std::atomic<int> held_signal{0};

void on_terminating_signal(int sig) {
  const int saved_errno = errno;
  if (signals_held.load()) {
    int none = 0;
    held_signal.compare_exchange_strong(none, sig);
    errno = saved_errno;
    return;
  }
  terminating_signal.store(sig);
  write_interrupt_note();  // first: what was kept is said even if a child is slow to stop
  stop_children();
  remove_temporaries();
  end_by_signal(sig);
  terminating_signal.store(0);  // reached only if the default action does not end the process
  errno = saved_errno;
}

}  // namespace

void end_by_signal(int sig) {
  // End as the signal would have: default action, delivered as soon as the handler's mask is lifted.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(sig, &fallback, nullptr);
  ::raise(sig);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
}

SignalsHeld::SignalsHeld() { signals_held.store(true); }

SignalsHeld::~SignalsHeld() {
  signals_held.store(false);
  const int sig = held_signal.exchange(0);
  if (sig != 0) on_terminating_signal(sig);
}

void clean_up_before_fatal_exit() {
  // As for the terminating signals: while the children are stopped, another thread that sees a pipe to one of
  // them break must not end lact the ordinary way (its exit tore down what the faulting threads still read:
  // SIGSEGV instead of the promised exit status 1, under load). The caller _exits, so the hold never lifts.
  terminating_signal.store(SIGBUS);
  stop_children();
  remove_temporaries();
}

void install_signal_cleanup() {
  std::atexit(hold_exit_while_terminating);  // after the sanitizers' own exit hooks, so it runs before them
  struct sigaction action {};
  action.sa_handler = on_terminating_signal;
  sigemptyset(&action.sa_mask);
  // While one of them is handled the others wait, so the tables are walked once.
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, sig);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction previous {};
    ::sigaction(sig, nullptr, &previous);
    // A signal the caller chose to ignore (nohup's SIGHUP, a background job's SIGINT) stays ignored.
    if (previous.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGXFSZ, &ignore, nullptr);
  ::sigaction(SIGPIPE, &ignore, nullptr);
}

void set_interrupt_note(const std::string& text) {
  if (text.empty()) return published_note.store(-1);
  const int next = published_note.load() == 0 ? 1 : 0;
  const size_t length = std::min(text.size(), static_cast<size_t>(kNoteBytes - 1));
  std::memcpy(notes[next], text.data(), length);
  notes[next][length] = '\0';
  published_note.store(next);
}

int register_temporary(const std::string& path) {
  std::error_code ec;
  // Absolute, so the handler's unlink does not depend on the working folder.
  const std::string full = std::filesystem::absolute(path, ec).string();
  if (ec || full.empty() || full.size() >= PATH_MAX) return -1;
  const int i = claim_slot(temporaries);
  if (i < 0) return -1;
  std::memcpy(temporaries[i].path, full.c_str(), full.size() + 1);
  temporaries[i].state.store(kReady);
  return i;
}

void unregister_temporary(int token) {
  if (token >= 0 && token < kTemporaries) temporaries[token].state.store(kFree);
}

int register_child(pid_t pid) {
  if (pid <= 0) return -1;
  const int i = claim_slot(children);
  if (i < 0) return -1;
  children[i].pid = pid;
  children[i].state.store(kReady);
  return i;
}

void unregister_child(int token) {
  if (token >= 0 && token < kChildren) children[token].state.store(kFree);
}

}  // namespace lact
