#include "system/thread_limit.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lact {

int usable_cpus() {
  // The mask grows until the kernel's fits (machines with more than 1024 CPUs need more than cpu_set_t).
  for (int size = 1024; size <= (1 << 20); size *= 2) {
    cpu_set_t* set = CPU_ALLOC(size);
    if (!set) return 1;
    const size_t bytes = CPU_ALLOC_SIZE(size);
    const int result = sched_getaffinity(0, bytes, set);
    const int count = result == 0 ? CPU_COUNT_S(bytes, set) : 0;
    const bool too_small = result != 0 && errno == EINVAL;
    CPU_FREE(set);
    if (!too_small) return count > 0 ? count : 1;
  }
  return 1;
}

int replacement_thread_count(const char* value, int cpus) {
  // Leading and trailing blanks are allowed, as libgomp allows them; then digits only (no sign, no list).
  const char* p = value;
  while (*p == ' ' || *p == '\t') ++p;
  long long first = 0;
  bool digits = false, overflow = false;
  for (; *p >= '0' && *p <= '9'; ++p, digits = true) {
    first = first * 10 + (*p - '0');
    if (first > 1000000000) overflow = true, first = 1000000000;
  }
  const char* rest = p;
  while (*p == ' ' || *p == '\t') ++p;
  if (!digits || overflow || first < 1) return cpus;
  if (*p == '\0' && first <= cpus) return 0;
  if (*p != '\0' && *rest != ',') return cpus;  // "4abc": not a number
  return first < cpus ? static_cast<int>(first) : cpus;
}

int threads_to_use(int requested, std::string& note, const std::string& setting) {
  note.clear();
  const int cpus = usable_cpus();
  if (requested <= 0) return cpus;
  if (requested <= cpus) return requested;
  note = setting + std::to_string(requested) + " is more than the " + std::to_string(cpus) +
         " CPUs this process may use: using " + std::to_string(cpus);
  return cpus;
}

namespace {

// Runnable scheduling entities on the whole machine now (/proc/loadavg's "R/T" field), and the 1-minute average.
bool read_loadavg(double& average, int& running) {
  std::FILE* file = std::fopen("/proc/loadavg", "re");
  if (!file) return false;
  int total = 0;
  const bool ok = std::fscanf(file, "%lf %*f %*f %d/%d", &average, &running, &total) == 3;
  std::fclose(file);
  return ok;
}

// This process's threads in state R (running or runnable): the reader itself, spinning OpenMP workers.
int own_running_threads() {
  int running = 0;
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return 1;
  while (const dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    char path[sizeof "/proc/self/task//stat" + sizeof entry->d_name], text[512] = {};
    std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", entry->d_name);
    std::FILE* file = std::fopen(path, "re");
    if (!file) continue;
    const size_t n = std::fread(text, 1, sizeof text - 1, file);
    std::fclose(file);
    const char* close = n ? std::strrchr(text, ')') : nullptr;  // the name may hold spaces and parentheses
    if (close && close[1] == ' ' && close[2] == 'R') ++running;
  }
  ::closedir(tasks);
  return std::max(running, 1);
}

}  // namespace

MachineLoad machine_load() {
  MachineLoad load;
  load.cpus = std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // Five looks 1 ms apart, the median: one look catches a compiler starting or a shell's pipe.
  constexpr int kLooks = 5;
  int others[kLooks] = {};
  int seen = 0;
  for (int look = 0; look < kLooks; ++look) {
    int running = 0;
    if (!read_loadavg(load.average, running)) break;
    others[seen++] = std::max(0, running - own_running_threads());
    if (look + 1 < kLooks) ::usleep(1000);
  }
  std::sort(others, others + seen);
  load.others_running = seen ? others[seen / 2] : 0;
  return load;
}

bool machine_busy() {
  static const bool busy = machine_load().others_running > 0;
  return busy;
}

int threads_beside(int cpus, const MachineLoad& load) {
  // Other threads spread over every online CPU: this process's share of them, where it may use only some.
  const int online = std::max(load.cpus, cpus);
  const int others = (load.others_running * cpus + online / 2) / online;
  return std::max(1, cpus - std::min(others, cpus));
}

int default_threads() {
  // OMP_NUM_THREADS set is a count asked for (a job script, a test harness): kept, so the same command gives the
  // same bits whatever else runs (the products' sums split by thread); only an unasked default follows the load.
  const char* asked = std::getenv("OMP_NUM_THREADS");
  if (asked && *asked) {
    const int cpus = usable_cpus(), replacement = replacement_thread_count(asked, cpus);
    if (replacement == 0) return static_cast<int>(std::strtol(asked, nullptr, 10));
    return replacement;
  }
  return threads_beside(usable_cpus(), machine_load());
}

namespace {

// Runs before libgomp's and OpenBLAS's initialisers (see the header), and before the C library's own: its
// `environ` is not set yet (getenv finds nothing, setenv would be undone), so the loader's `envp`, which becomes
// `environ`, is changed in place, every copy of a variable (an environment may hold a name twice).
void cap_thread_environment(int, char**, char** envp) {
  static char replaced[8][48];  // "NAME=count" strings the environment points to from now on
  int used = 0;
  const int cpus = usable_cpus();
  for (char** entry = envp; entry && *entry && used < 8; ++entry) {
    for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"}) {
      const size_t length = std::strlen(name);
      if (std::strncmp(*entry, name, length) != 0 || (*entry)[length] != '=') continue;
      const char* value = *entry + length + 1;
      const int use = replacement_thread_count(value, cpus);
      if (use == 0) break;
      // The value as given, cut short; anything but printable ASCII (controls, DEL, C1 and every other byte
      // above 0x7f, a count needs none) and quotes shown as '?', so the note cannot drive the terminal.
      char shown[24];
      std::snprintf(shown, sizeof shown, "%s", value);
      for (char* c = shown; *c; ++c) {
        const unsigned char u = static_cast<unsigned char>(*c);
        if (u < 0x20 || u >= 0x7f || *c == '\'') *c = '?';
      }
      char note[192];
      const int n = std::snprintf(note, sizeof note,
                                  "lact: note: %s='%s%s' is not a thread count from 1 to %d (the CPUs this process "
                                  "may use): using %d\n",
                                  name, shown, std::strlen(value) >= sizeof shown ? "..." : "", cpus, use);
      if (n > 0 && ::write(2, note, std::min<size_t>(n, sizeof note - 1)) < 0) {
      }
      std::snprintf(replaced[used], sizeof replaced[used], "%s=%d", name, use);
      *entry = replaced[used++];
      break;
    }
  }
}

// libgomp's workers spin after every parallel region before they sleep: 300000 turns by default (milliseconds),
// and a worker spinning while the thread it waits for has no CPU holds the CPU that thread needs. Beside two
// CPU-bound jobs on two cores a 40-frame turntable of the shipped model took 16-19 s so, 1.2-1.8 s with
// OMP_WAIT_POLICY=passive and 0.7-1.4 s with GOMP_SPINCOUNT=1000 (tens of microseconds: back-to-back regions on
// an idle machine still find their workers awake). libgomp reads the variable in its initialiser, and the
// environment cannot grow here, so one variable no initialiser reads lends its slot until the executable's own
// initialisers run (give_back_borrowed_slot), after libgomp's. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT
// is kept; an environment with none of these names keeps the default.
constexpr const char* kBoundedSpin = "GOMP_SPINCOUNT=1000";
char** borrowed_slot = nullptr;
char* borrowed_value = nullptr;

bool named(const char* entry, const char* name) {
  const size_t length = std::strlen(name);
  return std::strncmp(entry, name, length) == 0 && entry[length] == '=';
}

void bound_openmp_spinning(int, char**, char** envp) {
  if (!envp) return;
  for (char** entry = envp; *entry; ++entry)
    if (named(*entry, "OMP_WAIT_POLICY") || named(*entry, "GOMP_SPINCOUNT")) return;
  // Names only shells and logins read, the likeliest first ("_": the program's path, set by the shell).
  for (const char* name : {"_", "OLDPWD", "SHLVL", "PWD", "TERM", "HOSTNAME", "SHELL", "LOGNAME", "USER"})
    for (char** entry = envp; *entry; ++entry)
      if (named(*entry, name)) {
        borrowed_slot = entry, borrowed_value = *entry;
        *entry = const_cast<char*>(kBoundedSpin);
        return;
      }
}

// An initialiser of the executable itself: the dynamic loader runs it after every shared library's (libgomp has
// read its variables by then), before main and before anything can start a child.
__attribute__((constructor)) void give_back_borrowed_slot() {
  if (borrowed_slot) *borrowed_slot = borrowed_value, borrowed_slot = nullptr;
}

// The dynamic loader calls the executable's .preinit_array entries before any shared library's initialiser.
__attribute__((section(".preinit_array"), used)) void (*cap_thread_environment_entry)(int, char**,
                                                                                      char**) = &cap_thread_environment;
__attribute__((section(".preinit_array"), used)) void (*bound_openmp_spinning_entry)(int, char**,
                                                                                     char**) = &bound_openmp_spinning;

}  // namespace

double thread_run_queue_seconds() {
  FILE* file = std::fopen("/proc/thread-self/schedstat", "r");
  if (!file) return -1;
  unsigned long long on_cpu = 0, waited = 0;  // nanoseconds
  const bool read = std::fscanf(file, "%llu %llu", &on_cpu, &waited) == 2;
  std::fclose(file);
  return read ? waited * 1e-9 : -1;
}

}  // namespace lact
