#include "session/state_cache.h"

#include <algorithm>

#include "system/error.h"

namespace lact::session {

StateCache::StateCache(int64_t memory_bytes, std::function<std::string(const std::string&)> state_file,
                       Callbacks callbacks)
    : memory_bytes_(memory_bytes), state_file_(std::move(state_file)), callbacks_(std::move(callbacks)) {
  if (memory_bytes_ < 0) throw Error("--cache-memory", "must not be negative");
  if (!callbacks_.bytes) callbacks_.bytes = [](const SceneState& s) { return s.floats() * int64_t(sizeof(float)); };
}

std::shared_ptr<const SceneState> StateCache::get(const std::string& scene) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = held_.find(scene);
  if (found != held_.end()) {
    recency_.splice(recency_.begin(), recency_, found->second.recency);
    ++counts_.hits;
    return found->second.state;
  }
  const std::string path = state_file_(scene);
  std::shared_ptr<const SceneState> state;
  if (callbacks_.exists(path)) {
    state = std::make_shared<const SceneState>(callbacks_.load(path));
    ++counts_.loads;
  } else {
    SceneState encoded = callbacks_.encode(scene);
    callbacks_.save(encoded, path);  // before it is served: an eviction never means encoding it again
    state = std::make_shared<const SceneState>(std::move(encoded));
    ++counts_.encodes;
  }
  const int64_t bytes = callbacks_.bytes(*state);
  // Room first, so that the bound holds with the new state in it (a state larger than the bound alone is
  // still served: it is the one asked for, and the others leave).
  evict_beyond(memory_bytes_ - bytes, scene);
  recency_.push_front(scene);
  held_[scene] = Held{state, bytes, recency_.begin()};
  counts_.bytes += bytes;
  ++counts_.held;
  return state;
}

void StateCache::evict_beyond(int64_t bound, const std::string& keep) {
  while (!recency_.empty() && counts_.bytes > std::max<int64_t>(bound, 0)) {
    const std::string oldest = recency_.back();
    if (oldest == keep) break;
    recency_.pop_back();
    auto it = held_.find(oldest);
    counts_.bytes -= it->second.bytes;
    --counts_.held;
    ++counts_.evictions;
    held_.erase(it);
  }
}

StateCache::Counts StateCache::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

bool StateCache::holds(const std::string& scene) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_.count(scene) > 0;
}

}  // namespace lact::session
