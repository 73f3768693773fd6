// Ending well on a signal. SIGINT, SIGTERM and SIGHUP (Ctrl-C, `kill`, a closed terminal) stop the programs lact
// started, remove the temporary files it was writing, and then end lact by the same signal, so the shell sees
// 130/143/129 as it would without the handler. SIGXFSZ (a write past `ulimit -f`) and SIGPIPE (a reader that went
// away) are ignored: the write then fails with EFBIG or EPIPE and the error path that checks every write reports
// it in one line ("disk full?"), rather than the kernel killing lact with a temporary left behind.
//
// The handler is async-signal-safe: it reads fixed-size tables of C strings and pids copied at registration and
// calls only unlink, kill, waitpid, nanosleep, sigaction and raise. Registration is thread-safe and lock-free.
// It runs on a thread of its own: every other thread blocks the three signals, so the kernel never delivers one
// to a thread whose stack pointer a library borrowed (oneDNN's f32 GEMM kernel runs on its heap workspace, where
// a handler's frames overwrote the heap below it: ASan's "heap-buffer-overflow WRITE of size 152" in the handler).
// kill -9 cannot be caught: it may still leave a hidden temporary (never a partial file under a final name).
#pragma once

#include <sys/types.h>

#include <string>

namespace lact {

// Once, at the top of main. Ignored signals are inherited across exec: a child that needs SIGPIPE's default
// should have it reset when it is started (posix_spawnattr_setsigdefault).
void install_signal_cleanup();

// Blocks SIGINT, SIGTERM and SIGHUP in the main thread before the libraries' constructors run, so that a thread
// one of them starts at load time (the pthread build of OpenBLAS starts its workers so) blocks them too, as every
// thread started after install_signal_cleanup does: lact calls it from its .preinit_array
// (system/signal_block_at_start.cpp). install_signal_cleanup then lifts the block, in the main thread, for a
// signal it leaves alone (one the caller ignores). Only before main; async-signal-safe.
void block_terminating_signals_at_start();

// A file to remove if a signal ends lact (a temporary that is not yet under its final name). Returns a token
// for unregister_temporary, or -1 when the table is full or the path too long (then it is simply not removed).
// Register before creating the file and unregister after it was renamed or removed: a signal in between then
// unlinks a name that no longer exists, which is harmless.
int register_temporary(const std::string& path);
void unregister_temporary(int token);  // -1 is accepted and does nothing

// A child process (and its process group, when the child leads one) to SIGKILL and reap if a signal ends lact,
// before the temporaries are removed (so it cannot write one again). Returns a token, or -1 when the table is
// full. Unregister after the child has exited but before reaping it (waitid with WNOWAIT, then waitpid), or just
// before the reaping wait: a pid that was reaped may be reused by another process.
int register_child(pid_t pid);
void unregister_child(int token);  // -1 is accepted and does nothing

// A line the handler writes to stderr before it ends lact (what was kept of the work so far: "interrupted after
// 3 of 25 scenes ..."); the latest call wins, an empty `text` removes it. At most 1023 bytes are kept. Calls
// from one thread at a time.
void set_interrupt_note(const std::string& text);

// While one lives, a terminating signal waits: the handler notes it and returns, and the destructor of the last
// one alive ends lact by it (as the handler would have) once the section is over. For short sections that must
// not be cut in two: a report written and the interrupt note that names it; a temporary created and registered;
// a child started and registered. Any number, on any threads, nested too. One made while a signal already ends
// lact waits for the end (what it would start, the cleanup under way would miss).
class SignalsHeld {
 public:
  SignalsHeld();
  ~SignalsHeld();
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;
};

// For a thread that saw a child of lact's end (a pipe closed, an exit status): when the signal cleanup stopped
// it, waits for the end the cleanup is bringing (rather than report the child's death as an error); else
// returns at once.
void wait_if_ending();

// A last step of the cleanup a terminating signal does, after the children were stopped and the temporaries
// removed (lact import's working folder, system/interrupt_cleanup.h); async-signal-safe; nullptr removes it.
void set_signal_cleanup_step(void (*step)());

// For the handler of another fatal signal (system/mapped_file's SIGBUS, which ends lact with exit status 1): stops
// the registered children and removes the registered temporaries as the handler above does, without ending
// lact. Async-signal-safe.
void clean_up_before_fatal_exit();

// From a signal handler: ends lact as `sig`'s default action would (the shell sees 128 + sig), once the handler's
// mask is lifted; returns only if that action does not end the process. Async-signal-safe.
void end_by_signal(int sig);

}  // namespace lact
