#include "kernels/cpu/block_pool.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "kernels/cpu/large_blocks.h"

namespace lact {

void* BlockPool::take(size_t bytes, int64_t alive, int64_t high_water) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes >= kSmallest)
    for (auto it = held_.rbegin(); it != held_.rend(); ++it)  // the newest first: the most recently used size
      if (it->bytes == bytes) {
        void* block = it->block;
        held_.erase(std::next(it).base());
        held_bytes_ -= static_cast<int64_t>(bytes);
        return block;
      }
  // The caller maps a fresh block: the oldest held ones go first, as far as needed to keep alive + held within
  // the high-water mark (which this block may raise).
  evict_above(std::max(high_water, alive) - alive);
  return nullptr;
}

void BlockPool::evict_above(int64_t most_held) {
  while (!held_.empty() && held_bytes_ > most_held) {
    free_block(held_.front().block, held_.front().bytes);
    held_bytes_ -= static_cast<int64_t>(held_.front().bytes);
    held_.erase(held_.begin());
  }
}

void BlockPool::give(void* block, size_t bytes, int64_t alive, int64_t high_water) {
  if (bytes >= kSmallest) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The newest freed block is the likeliest asked for next (the same intermediate, the next layer): the oldest
    // held ones make room for it.
    evict_above(high_water - alive - static_cast<int64_t>(bytes));
    if (alive + held_bytes_ + static_cast<int64_t>(bytes) <= high_water) {
      held_.push_back({bytes, block});
      held_bytes_ += static_cast<int64_t>(bytes);
      return;
    }
  }
  free_block(block, bytes);
}

void BlockPool::release_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Held& h : held_) free_block(h.block, h.bytes);
  held_.clear();
  held_bytes_ = 0;
}

int64_t BlockPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_bytes_;
}

}  // namespace lact
