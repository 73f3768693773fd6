// The thread counts OpenMP and OpenBLAS start with, held to the CPUs this process may use. libgomp and OpenBLAS
// read OMP_NUM_THREADS (OpenBLAS also OPENBLAS_NUM_THREADS and GOTO_NUM_THREADS) in their own load-time
// initialisers, before main: OMP_NUM_THREADS=100000 made the first parallel region start 100000 threads. So
// thread_limit.cpp fixes those variables from the executable's .preinit_array, which the dynamic loader runs
// before any shared library's initialiser, and prints one note per replaced value.
#pragma once

#include <string>

namespace lact {

// CPUs this process may run on (its sched_getaffinity mask), at least 1.
int usable_cpus();

// What a thread-count variable's `value` becomes with `cpus` usable CPUs: 0 when it stays as it is (one whole
// number from 1 to cpus), else the count to use instead (the first entry of a list like "4,2", at most cpus;
// cpus for anything that is not a positive number: "", "0", "-3", "abc", a number past any integer).
int replacement_thread_count(const char* value, int cpus);

// The worker threads a run uses for --threads `requested` (0: every usable CPU); above the usable CPUs it is
// their count and `note` says so, naming the setting as `setting` writes it before the number (Python's
// "threads="; else `note` is left empty).
int threads_to_use(int requested, std::string& note, const std::string& setting = "--threads ");

// Other work on this machine now: what a default thread count leaves room for, and what estimates and benchmarks
// say they were measured under.
struct MachineLoad {
  int cpus = 1;            // CPUs online (the load average counts the work on all of them)
  double average = 0;      // the 1-minute load average
  int others_running = 0;  // other processes' threads running or ready to run now (the median of a few looks)
};
MachineLoad machine_load();
// Whether other processes' threads want CPUs now (machine_load, looked at once per process).
bool machine_busy();
// The seconds the calling thread has waited on a run queue, runnable while other work held the CPUs (the kernel's
// /proc/thread-self/schedstat); -1 where it does not say.
double thread_run_queue_seconds();

// The worker threads when --threads is not given: OMP_NUM_THREADS when set (at most the usable CPUs), else the
// usable CPUs less those other running threads want, at least 1 (libgomp's spinning is bounded too: thread_limit.cpp).
// Two threads beside two CPU-bound jobs on two cores wait at every barrier for a thread that has no CPU.
int default_threads();
// The same for `cpus` usable CPUs beside `load` (the rule, apart from reading the machine).
int threads_beside(int cpus, const MachineLoad& load);

}  // namespace lact
