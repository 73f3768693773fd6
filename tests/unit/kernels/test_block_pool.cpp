// kernels/cpu/block_pool.h: freed tensor blocks reused by size, never holding more than the most ever alive.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/block_pool.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/large_blocks.h"

namespace lact {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

void* block(size_t bytes) { return allocate_block(bytes); }

// Blocks of every size are 64-byte aligned and wholly usable; without ASan those of 2 MiB and more start on a
// 2 MiB boundary, where transparent huge pages can back them.
TEST(LargeBlocks, AlignedAndWholeAtEverySize) {
  for (size_t bytes : {size_t{64}, kMiB + 64, 2 * kMiB, 5 * kMiB + 4160}) {
    auto* p = static_cast<unsigned char*>(allocate_block(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
#if !defined(__SANITIZE_ADDRESS__)
    if (bytes >= 2 * kMiB) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2 * kMiB), 0u) << bytes;
    }
#endif
    for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 7);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += p[i] != static_cast<unsigned char>(i * 7);
    EXPECT_EQ(wrong, 0u) << bytes;
    free_block(p, bytes);
  }
}

TEST(BlockPool, HoldsOnlyUnderTheHighWaterMark) {
  BlockPool pool;
  // 3 MiB were alive at most; 1 MiB still is: a 2 MiB block may be held (1 + 0 + 2 <= 3); a second takes the
  // first one's place (1 + 2 + 2 > 3: the oldest is freed).
  void* first = block(2 * kMiB);
  void* second = block(2 * kMiB);
  pool.give(first, 2 * kMiB, 1 * kMiB, 3 * kMiB);
  EXPECT_EQ(pool.held_bytes(), static_cast<int64_t>(2 * kMiB));
  pool.give(second, 2 * kMiB, 1 * kMiB, 3 * kMiB);
  EXPECT_EQ(pool.held_bytes(), static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(pool.take(2 * kMiB, 3 * kMiB, 3 * kMiB), second);
  EXPECT_EQ(pool.held_bytes(), 0);
  free_block(second, kMiB * 2);
  // Below the size glibc maps on its own: never held.
  pool.give(block(kMiB / 2), kMiB / 2, 0, 100 * kMiB);
  EXPECT_EQ(pool.held_bytes(), 0);
}

TEST(BlockPool, ReusesTheExactSizeOnly) {
  BlockPool pool;
  void* a = block(2 * kMiB);
  void* b = block(4 * kMiB);
  pool.give(a, 2 * kMiB, 0, 100 * kMiB);
  pool.give(b, 4 * kMiB, 0, 100 * kMiB);
  EXPECT_EQ(pool.take(4 * kMiB, 4 * kMiB, 100 * kMiB), b);
  EXPECT_EQ(pool.held_bytes(), static_cast<int64_t>(2 * kMiB));
  EXPECT_EQ(pool.take(3 * kMiB, 7 * kMiB, 100 * kMiB), nullptr);
  EXPECT_EQ(pool.held_bytes(), static_cast<int64_t>(2 * kMiB));
  pool.release_all();
  EXPECT_EQ(pool.held_bytes(), 0);
  EXPECT_EQ(pool.take(2 * kMiB, 2 * kMiB, 100 * kMiB), nullptr);
  free_block(b, 4 * kMiB);
}

TEST(BlockPool, AFreshBlockEvictsWhatWouldTakeTheProcessPastItsHighWaterMark) {
  BlockPool pool;
  void* a = block(2 * kMiB);
  void* b = block(2 * kMiB);
  pool.give(a, 2 * kMiB, 0, 4 * kMiB);  // 4 MiB were alive at most; now nothing: both held
  pool.give(b, 2 * kMiB, 0, 4 * kMiB);
  EXPECT_EQ(pool.held_bytes(), static_cast<int64_t>(4 * kMiB));
  // A fresh 3 MiB block (3 MiB alive): 3 + 4 > 4, so both held blocks go (3 + 2 > 4 still after the first).
  EXPECT_EQ(pool.take(3 * kMiB, 3 * kMiB, 4 * kMiB), nullptr);
  EXPECT_EQ(pool.held_bytes(), 0);
  void* c = block(1 * kMiB);
  void* d = block(1 * kMiB);
  pool.give(c, 1 * kMiB, 0, 4 * kMiB);
  pool.give(d, 1 * kMiB, 0, 4 * kMiB);
  // A fresh 2 MiB block (2 MiB alive, high water 4): 2 + 2 <= 4, both stay.
  EXPECT_EQ(pool.take(2 * kMiB, 2 * kMiB, 4 * kMiB), nullptr);
  EXPECT_EQ(pool.held_bytes(), static_cast<int64_t>(2 * kMiB));
  // A fresh 5 MiB block beside 2 MiB alive raises the high-water mark to 7: nothing may be held beside them.
  EXPECT_EQ(pool.take(5 * kMiB, 7 * kMiB, 4 * kMiB), nullptr);
  EXPECT_EQ(pool.held_bytes(), 0);
}

TEST(BlockPool, TheCpuBackendReusesAFreedTensorsBlock) {
  CpuBackend be(1);
  const void* first = nullptr;
  {
    Tensor a = be.empty({512, 768});  // 1.5 MiB, an intermediate of the paper's shape
    Tensor b = be.empty({512, 768});
    first = a.data();
  }
  Tensor c = be.empty({512, 768});
  Tensor d = be.empty({512, 768});
  EXPECT_TRUE(c.data() == first || d.data() == first);
  EXPECT_EQ(be.allocated_memory(), 2 * 512 * 768 * 4);
}

// An encode's pattern: each step (layer) first keeps a piece of state, then uses and frees a working set of other
// sizes. Without notice, each step's new state would push the oldest held block out (alive + held must stay
// within the most ever alive) and that block would be mapped afresh in every step; told the growth after the
// first step (Backend::expect_growth), every later step reuses the same blocks: no fresh block but its state.
TEST(BlockPool, ToldTheGrowthEachStepReusesItsWorkingSet) {
  for (const bool told : {false, true}) {
    CpuBackend be(1);
    const int steps = 6;
    std::vector<Tensor> state;
    be.expect_growth(0);
    int64_t fresh_after_first = 0;
    for (int step = 0; step < steps; ++step) {
      state.push_back(be.empty({256, 1024}));  // 1 MiB kept
      {
        Tensor a = be.empty({512, 768});   // 1.5 MiB
        Tensor b = be.empty({1024, 768});  // 3 MiB
      }
      if (step == 0) {
        if (told) be.expect_growth((int64_t{1} << 20) * (steps - 1));
        fresh_after_first = be.fresh_large_blocks();
      }
    }
    const int64_t fresh_later = be.fresh_large_blocks() - fresh_after_first;
    if (told) {
      EXPECT_EQ(fresh_later, steps - 1);  // the state's blocks only
    } else {
      EXPECT_EQ(fresh_later, 2 * (steps - 1));  // and one of the working set's per step
    }
  }
}

// A render's layer: blocks of several sizes, never all alive at once, in the same order each step. Held only up
// to the most alive at once, a block of one size was evicted to make room for the next size and mapped again the
// next step; told that the step repeats, the pool holds one of each from the next step on, and the steps after
// map none. The peak is
// then what was alive at the start plus one step's allocations, no more.
TEST(BlockPool, ARepeatedStepKeepsEveryBlockItAllocated) {
  for (const bool told : {false, true}) {
    SCOPED_TRACE(told ? "told" : "not told");
    CpuBackend be(1);
    const Tensor kept = be.empty({1024, 1024});  // 4 MiB alive throughout
    be.expect_growth(0);
    int64_t fresh_by_second_step = 0;
    for (int step = 0; step < 5; ++step) {
      { Tensor wide = be.empty({1024, 1536}); }  // 6 MiB, freed
      {
        Tensor a = be.empty({512, 768}), b = be.empty({512, 768});  // 1.5 MiB each, freed
      }
      { Tensor c = be.empty({512, 1536}); }  // 3 MiB, freed
      if (step == 0 && told) be.hold_step_blocks();
      if (step == 1) fresh_by_second_step = be.fresh_large_blocks();  // the step after the call fills the pool
    }
    const int64_t fresh_later = be.fresh_large_blocks() - fresh_by_second_step;
    if (told) {
      EXPECT_EQ(fresh_later, 0);
      EXPECT_LE(be.peak_memory(), (int64_t{4} + 6 + 3 + 3) << 20);
    } else {
      EXPECT_GE(fresh_later, 3);  // at least one block mapped again every step
    }
  }
}

}  // namespace
}  // namespace lact
