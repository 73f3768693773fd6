#include "system/host_memory.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "system/thread_limit.h"

namespace lact {

namespace {

std::atomic<int64_t> host_cap{-1};

// Limits at or above this are "none" (cgroup v1 writes 2^63 rounded to a page for no limit).
constexpr int64_t kNoLimit = int64_t(1) << 62;

std::string root_from(const char* variable, const char* fallback) {
  const char* value = std::getenv(variable);
  return value && *value ? value : fallback;
}

// A small regular file's text; empty where it is missing, not a regular file or unreadable.
std::string read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return "";
  struct stat st;
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buffer[4096];
    for (ssize_t n; text.size() < 65536 && (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  }
  ::close(fd);
  return text;
}

// The number after "key" (followed by ':' or a blank) at the start of a line, times `unit`; -1 where absent.
int64_t field_value(const std::string& text, const std::string& key, int64_t unit) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, key.size(), key) != 0 || line.size() == key.size()) continue;
    const char next = line[key.size()];
    if (next != ':' && next != ' ' && next != '\t') continue;
    const long long value = std::strtoll(line.c_str() + key.size() + 1, nullptr, 10);
    return value < 0 || value > kNoLimit / unit ? -1 : value * unit;
  }
  return -1;
}

// A file holding one number ("max" or garbage: -1).
int64_t number_file(const std::string& path) {
  const std::string text = read_small_file(path);
  if (text.empty() || text[0] < '0' || text[0] > '9') return -1;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  return value < 0 || value >= kNoLimit ? -1 : value;
}

void consider(HostMemoryLimit& least, int64_t bytes, const std::string& source) {
  if (bytes < 0) return;
  if (least.bytes < 0 || bytes < least.bytes) least = {bytes, source};
}

// What a limit leaves above what is in use (never below 0).
int64_t left(int64_t limit, int64_t used, int64_t reclaimable) {
  const int64_t rest = limit - std::max<int64_t>(0, used) + std::max<int64_t>(0, reclaimable);
  return std::max<int64_t>(0, std::min(rest, limit));
}

struct ProcessLimit {
  int resource;
  const char *field, *name;
  int64_t per_thread;  // what each worker thread may still take: its stack, and (address space) its malloc arena
};
constexpr ProcessLimit kProcessLimits[] = {{RLIMIT_AS, "VmSize", "ulimit -v (RLIMIT_AS)", int64_t(72) << 20},
                                           {RLIMIT_DATA, "VmData", "ulimit -d (RLIMIT_DATA)", int64_t(8) << 20}};

void consider_rlimits(HostMemoryLimit& least, const std::string& proc) {
  std::string status;
  for (const ProcessLimit& l : kProcessLimits) {
    struct rlimit r;
    if (::getrlimit(l.resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= rlim_t(kNoLimit)) continue;
    if (status.empty()) status = read_small_file(proc + "/self/status");
    const int64_t in_use = std::max<int64_t>(0, field_value(status, l.field, 1024)) + l.per_thread * usable_cpus();
    consider(least, left(static_cast<int64_t>(r.rlim_cur), in_use, 0), l.name);
  }
}

// OpenBLAS's initialiser maps a 128 MiB buffer for each of its threads and retries a failed mmap for ever: under
// a ulimit -v or -d too small for them lact hung before main. This runs before it (the executable's
// .preinit_array, as in system/thread_limit.cpp; the C library is not initialised yet, so little more than
// system calls is used) and ends the process with one line instead. Measured: 1 thread needs about 125 MiB above
// this point, 2 threads 265 MiB.
constexpr int64_t kOpenBlasBuffer = int64_t(128) << 20, kStartupMargin = int64_t(64) << 20;

// The threads OpenBLAS will start with: its variables in the order it reads them (as thread_limit.cpp leaves
// them), else the usable CPUs.
int openblas_threads(char** envp) {
  const int cpus = usable_cpus();
  for (const char* name : {"OPENBLAS_NUM_THREADS=", "GOTO_NUM_THREADS=", "OMP_NUM_THREADS="})
    for (char** entry = envp; entry && *entry; ++entry)
      if (std::strncmp(*entry, name, std::strlen(name)) == 0) {
        const char* value = *entry + std::strlen(name);
        const int replacement = replacement_thread_count(value, cpus);
        return replacement ? replacement : std::atoi(value);
      }
  return cpus;
}

int64_t status_kib(const char* text, const char* key) {
  const char* at = std::strstr(text, key);
  return at ? std::strtoll(at + std::strlen(key), nullptr, 10) : -1;
}

void refuse_too_small_process_limits(int, char**, char** envp) {
  char status[4096] = {};
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = ::read(fd, status, sizeof status - 1);
  ::close(fd);
  if (n <= 0) return;
  for (const ProcessLimit& l : kProcessLimits) {
    char key[16];
    std::snprintf(key, sizeof key, "\n%s:", l.field);
    const int64_t used = status_kib(status, key);
    struct rlimit r;
    if (used < 0 || ::getrlimit(l.resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) continue;
    const int64_t need = used * 1024 + openblas_threads(envp) * kOpenBlasBuffer + kStartupMargin;
    if (static_cast<int64_t>(r.rlim_cur) >= need) continue;
    char line[256];
    const int length =
        std::snprintf(line, sizeof line,
                      "lact: %s is %lld KiB: lact needs about %lld KiB to start (its libraries and "
                      "OpenBLAS's buffers, 128 MiB a thread): raise it or set OMP_NUM_THREADS lower\n",
                      l.name, static_cast<long long>(r.rlim_cur / 1024), static_cast<long long>(need / 1024));
    if (length > 0 && ::write(2, line, std::min<size_t>(length, sizeof line - 1)) < 0) {
    }
    ::_exit(1);
  }
}

__attribute__((section(".preinit_array"),
               used)) void (*refuse_too_small_process_limits_entry)(int, char**,
                                                                    char**) = &refuse_too_small_process_limits;

// Every cgroup the process is in, innermost first: "/a/b" -> "/a/b", "/a", "/".
std::vector<std::string> cgroup_and_ancestors(std::string path) {
  std::vector<std::string> chain;
  while (!path.empty() && path != "/") {
    chain.push_back(path);
    path.erase(path.find_last_of('/') == 0 ? 1 : path.find_last_of('/'));
  }
  chain.push_back("/");
  return chain;
}

void consider_cgroup_v2(HostMemoryLimit& least, const std::string& root, const std::string& path) {
  for (const std::string& group : cgroup_and_ancestors(path)) {
    const std::string folder = root + (group == "/" ? "" : group);
    const int64_t max = number_file(folder + "/memory.max");
    if (max < 0) continue;
    const int64_t inactive = field_value(read_small_file(folder + "/memory.stat"), "inactive_file", 1);
    consider(least, left(max, number_file(folder + "/memory.current"), inactive), "cgroup memory.max of " + group);
  }
}

void consider_cgroup_v1(HostMemoryLimit& least, const std::string& root, const std::string& path) {
  // Inside a container the hierarchy's root is often the container's own group, not `path`.
  for (const std::string& folder : {root + "/memory" + path, root + "/memory"}) {
    const std::string stat = read_small_file(folder + "/memory.stat");
    if (stat.empty()) continue;
    const int64_t limit = field_value(stat, "hierarchical_memory_limit", 1);
    if (limit >= 0 && limit < kNoLimit)
      consider(least,
               left(limit, number_file(folder + "/memory.usage_in_bytes"), field_value(stat, "total_inactive_file", 1)),
               "cgroup memory.limit_in_bytes of " + path);
    return;
  }
}

void consider_cgroups(HostMemoryLimit& least, const std::string& proc) {
  const std::string root = root_from("LACT_CGROUP_ROOT", "/sys/fs/cgroup");
  std::istringstream lines(read_small_file(proc + "/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy:controllers:path"; v2 is "0::path".
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos || b + 1 >= line.size() || line[b + 1] != '/') continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) consider_cgroup_v2(least, root, path);
    if (("," + controllers + ",").find(",memory,") != std::string::npos) consider_cgroup_v1(least, root, path);
  }
}

}  // namespace

HostMemoryLimit host_memory_limit() {
  const std::string proc = root_from("LACT_PROC_ROOT", "/proc");
  HostMemoryLimit least;
  consider(least, field_value(read_small_file(proc + "/meminfo"), "MemAvailable", 1024), "MemAvailable");
  consider_rlimits(least, proc);
  consider_cgroups(least, proc);
  return least;
}

void set_host_memory_cap(int64_t bytes) { host_cap.store(bytes > 0 ? bytes : -1); }

HostMemoryLimit usable_host_memory() {
  HostMemoryLimit least = host_memory_limit();
  // The cap is on the whole process: what it leaves above what is resident now.
  const int64_t cap = host_cap.load();
  if (cap > 0) consider(least, std::max<int64_t>(0, cap - std::max<int64_t>(0, resident_bytes())), "--memory-limit");
  return least;
}

int64_t resident_bytes() {
  const std::string proc = root_from("LACT_PROC_ROOT", "/proc");
  return field_value(read_small_file(proc + "/self/status"), "VmRSS", 1024);
}

int64_t resident_bytes_in(const void* begin, size_t length) {
  // smaps can be longer than read_small_file reads: streamed line by line. A mapping is "start-end perms ...",
  // then its fields; its Rss counts when the mapping overlaps the range (its end is rounded up to a page).
  std::ifstream smaps(root_from("LACT_PROC_ROOT", "/proc") + "/self/smaps");
  const uintptr_t low = reinterpret_cast<uintptr_t>(begin), high = low + length;
  bool inside = false;
  int64_t total = 0;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2 && line.find('-') < line.find(' ')) {
      inside = start < high && end > low;
    } else if (inside && line.compare(0, 4, "Rss:") == 0) {
      total += std::strtoll(line.c_str() + 4, nullptr, 10) * 1024;
    }
  }
  return total;
}

std::string memory_size_text(int64_t bytes) {
  char text[32];
  if (bytes < (int64_t(1) << 30) / 10)
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  else
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (int64_t(1) << 30));
  return text;
}

}  // namespace lact
