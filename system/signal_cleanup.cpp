#include "system/signal_cleanup.h"

#include <pthread.h>
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

// The holds (SignalsHeld) and the end, in one word so that the handler's "end lact now, or leave it to the last
// holder" and a holder's "enter, or wait for the end another thread began" are each one atomic step: the holders
// (in units of kOneHolder), the signal waiting for the last of them (kSignalBits) and kEnding once a thread ends lact.
constexpr unsigned kSignalBits = 0x3f;
constexpr unsigned kEnding = 0x40;
constexpr unsigned kOneHolder = 0x80;
static_assert(std::atomic<unsigned>::is_always_lock_free, "the handler needs lock-free atomics");
std::atomic<unsigned> hold_state{0};

// A step of lact import's (its working folder), after the children are stopped and the temporaries removed.
std::atomic<void (*)()> cleanup_step{nullptr};

// What a terminating signal does: say what was kept, stop the children, remove the temporaries, end by it.
void end_lact(int sig) {
  terminating_signal.store(sig);
  write_interrupt_note();  // first: what was kept is said even if a child is slow to stop
  stop_children();
  remove_temporaries();
  if (void (*step)() = cleanup_step.load()) step();
  end_by_signal(sig);
  terminating_signal.store(0);  // reached only if the default action does not end the process
}

// The handler of SIGINT, SIGTERM and SIGHUP, on the receiving thread (below). A signal during a hold waits for
// the last holder, who then ends lact by it; one after the end began (another thread's) changes nothing.
void on_terminating_signal(int sig) {
  const int saved_errno = errno;
  unsigned state = hold_state.load();
  unsigned next = 0;
  do {
    if (state & kEnding) break;  // another thread is ending lact already
    const bool held = state >= kOneHolder;
    next = !held ? state | kEnding : (state & kSignalBits) != 0 ? state : state | static_cast<unsigned>(sig);
  } while (!hold_state.compare_exchange_weak(state, next));
  if ((state & kEnding) == 0 && (next & kEnding) != 0) end_lact(sig);
  errno = saved_errno;
}

// The main thread's mask before block_terminating_signals_at_start blocked the three (when it ran).
sigset_t mask_at_start;
bool blocked_at_start = false;

// Where the process-directed signals land: the one thread that does not block them. A thread computing may run
// on a stack of its own making (oneDNN's f32 GEMM kernel points rsp at its heap workspace when K > 2048): a
// handler there wrote its frames, and the kernel its signal frame, over the heap below that workspace.
sigset_t handled_signals;

void* receive_signals(void*) {
  ::pthread_sigmask(SIG_UNBLOCK, &handled_signals, nullptr);
  for (;;) ::pause();
}

// Blocks the handled signals in this thread and so in every thread started from it later (install_signal_cleanup
// runs first in main, before any), and starts the receiving thread. Without it, they are handled as before. The
// block from before main stays for the handled signals and is lifted for the others.
void start_signal_receiver() {
  sigset_t before;
  if (blocked_at_start)
    before = mask_at_start;
  else if (::pthread_sigmask(SIG_SETMASK, nullptr, &before) != 0)
    return;
  sigset_t blocked = before;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP})
    if (sigismember(&handled_signals, sig) == 1) sigaddset(&blocked, sig);
  if (::pthread_sigmask(SIG_SETMASK, &blocked, nullptr) != 0) return;
  pthread_t thread;
  if (::pthread_create(&thread, nullptr, receive_signals, nullptr) != 0) {
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return;
  }
  ::pthread_detach(thread);
}

[[noreturn]] void wait_for_the_end() {
  for (;;) ::pause();  // the signals are blocked here: the thread that ends lact ends this one too
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

SignalsHeld::SignalsHeld() {
  unsigned state = hold_state.load();
  do {
    if (state & kEnding) wait_for_the_end();  // what this section starts, the cleanup under way would miss
  } while (!hold_state.compare_exchange_weak(state, state + kOneHolder));
}

SignalsHeld::~SignalsHeld() {
  unsigned state = hold_state.load();
  unsigned next = 0;
  int sig = 0;
  do {
    next = state - kOneHolder;
    sig = 0;
    if ((next & kEnding) == 0 && next < kOneHolder && (next & kSignalBits) != 0) {
      sig = static_cast<int>(next & kSignalBits);  // the last holder ends lact by the signal that waited
      next = kEnding;
    }
  } while (!hold_state.compare_exchange_weak(state, next));
  if (sig != 0) end_lact(sig);
}

void wait_if_ending() {
  if (hold_state.load() & kEnding) wait_for_the_end();
}

void set_signal_cleanup_step(void (*step)()) { cleanup_step.store(step); }

void clean_up_before_fatal_exit() {
  // As for the terminating signals: while the children are stopped, another thread that sees a pipe to one of
  // them break must not end lact the ordinary way (its exit tore down what the faulting threads still read:
  // SIGSEGV instead of the promised exit status 1, under load). The caller _exits, so the hold never lifts.
  hold_state.fetch_or(kEnding);
  terminating_signal.store(SIGBUS);
  stop_children();
  remove_temporaries();
}

void block_terminating_signals_at_start() {
  sigset_t terminating;
  sigemptyset(&terminating);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&terminating, sig);
  blocked_at_start = ::pthread_sigmask(SIG_BLOCK, &terminating, &mask_at_start) == 0;
}

void install_signal_cleanup() {
  std::atexit(hold_exit_while_terminating);  // after the sanitizers' own exit hooks, so it runs before them
  struct sigaction action {};
  action.sa_handler = on_terminating_signal;
  sigemptyset(&action.sa_mask);
  // While one of them is handled the others wait, so the tables are walked once.
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, sig);
  sigemptyset(&handled_signals);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction previous {};
    ::sigaction(sig, nullptr, &previous);
    // A signal the caller chose to ignore (nohup's SIGHUP, a background job's SIGINT) stays ignored.
    if (previous.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
    sigaddset(&handled_signals, sig);
  }
  start_signal_receiver();
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
