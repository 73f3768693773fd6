// Freed tensor blocks held for the next allocation of the same size. glibc maps every block of 1 MiB or more
// afresh and unmaps it when freed (kernels/cpu/cpu_backend.cpp fixes that threshold so the process's peak RSS
// is what is alive), so without this every intermediate of an encode's layer loop took a page fault and a
// zeroed page per 4 KiB touched.
// The pool holds blocks only while the bytes alive plus the bytes held stay within the most ever alive at once
// (the high-water mark), checked when a block is freed and when a fresh one is mapped: the process then never has more
// than it already had, and its peak RSS, which the memory estimate bounds, is unchanged. The memory check releases
// every held block before it reads what the process holds (Backend::release_held_memory), so a held block is never
// counted beside the next encode's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace lact {

class BlockPool {
 public:
  static constexpr size_t kSmallest = size_t{1} << 20;  // below this glibc's heap reuses blocks itself

  BlockPool() = default;
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool() { release_all(); }

  // For an allocation of `bytes` that makes `alive` bytes in use (this block included), with `high_water` the
  // most in use before it: a held block of exactly that size (64-byte aligned), or nullptr, and then held blocks
  // freed, the oldest first, until alive + held is within the high-water mark again.
  void* take(size_t bytes, int64_t alive, int64_t high_water);
  // A block of `bytes` no longer used: held, the oldest held blocks freed as needed to keep
  // `alive + held <= high_water` (alive: the bytes still in use, without this block); freed when below kSmallest.
  void give(void* block, size_t bytes, int64_t alive, int64_t high_water);
  // Frees every held block.
  void release_all();
  int64_t held_bytes() const;

 private:
  void evict_above(int64_t most_held);  // frees the oldest held blocks while more than `most_held` bytes are held

  mutable std::mutex mutex_;
  struct Held {
    size_t bytes;
    void* block;
  };
  std::vector<Held> held_;  // oldest first; a few dozen at most (one layer's intermediates)
  int64_t held_bytes_ = 0;
};

}  // namespace lact
