// How much more host memory this process may take, and which limit says so: the least of the kernel's
// MemAvailable, what RLIMIT_AS (ulimit -v) and RLIMIT_DATA (ulimit -d) leave above the process's current VmSize
// and VmData, what the memory cgroup leaves (v2: memory.max - memory.current + inactive_file, at the process's
// cgroup and every ancestor; v1: hierarchical_memory_limit - usage_in_bytes + total_inactive_file) and the cap
// a run sets (--memory-limit). Checked before an encode or an image read allocates, so that a scene too large
// stops with one line instead of an allocation failure or the OOM killer.
//
// The files are read under $LACT_PROC_ROOT (default /proc: meminfo, self/status, self/cgroup) and
// $LACT_CGROUP_ROOT (default /sys/fs/cgroup), so that tests can stand in fake ones; only regular files are read
// (a FIFO there cannot block), at most 64 KiB each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lact {

struct HostMemoryLimit {
  int64_t bytes = -1;  // -1: no limit known
  std::string source;  // what set it, e.g. "MemAvailable", "ulimit -v", "cgroup memory.max of /user.slice"
};

// The least of the limits above (without the run's cap).
HostMemoryLimit host_memory_limit();
// The run's cap in bytes (--memory-limit; <= 0: none), and host_memory_limit() at most that.
void set_host_memory_cap(int64_t bytes);
HostMemoryLimit usable_host_memory();

// This process's resident memory now (VmRSS; -1 where unreadable), and the resident bytes of its mappings that
// lie within [begin, begin + length) (from /proc/self/smaps; 0 where unreadable).
int64_t resident_bytes();
int64_t resident_bytes_in(const void* begin, size_t length);

// "1.50 GiB", or MiB below 0.1 GiB.
std::string memory_size_text(int64_t bytes);

}  // namespace lact
