// The encoded states of the scenes one server serves, within a memory bound (for a `lact serve` of many scenes,
// not wired in yet): a scene's state is encoded on first use and written to its state file (so it is never encoded
// twice), read back from that file when it is asked for again after being evicted, and the least recently used
// states leave memory when the bound would be passed. A state in use (a shared_ptr held by a render) stays valid
// after its eviction; the bound counts the states the cache holds. One scene is read or encoded at a time (one
// model, one backend).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/model.h"

namespace lact::session {

class StateCache {
 public:
  struct Callbacks {
    std::function<SceneState(const std::string& scene)> encode;            // the scene's inputs through the model
    std::function<SceneState(const std::string& path)> load;               // a state file written by `save`
    std::function<void(const SceneState&, const std::string& path)> save;  // atomically (a new file, renamed)
    std::function<bool(const std::string& path)> exists;
    std::function<int64_t(const SceneState&)> bytes;  // default: floats() * 4
  };
  // `memory_bytes`: the bound (>= 0). `state_file(scene)` names the file a scene's state is read from / spilled to.
  StateCache(int64_t memory_bytes, std::function<std::string(const std::string& scene)> state_file,
             Callbacks callbacks);

  // The scene's state: from memory, else its state file, else encoded (and saved to that file).
  std::shared_ptr<const SceneState> get(const std::string& scene);

  struct Counts {
    int encodes = 0, loads = 0, evictions = 0, hits = 0;
    int64_t bytes = 0;  // held now
    int held = 0;       // states held now
  };
  Counts counts() const;
  bool holds(const std::string& scene) const;

 private:
  void evict_beyond(int64_t bound, const std::string& keep);  // mutex held

  const int64_t memory_bytes_;
  std::function<std::string(const std::string&)> state_file_;
  Callbacks callbacks_;
  mutable std::mutex mutex_;
  struct Held {
    std::shared_ptr<const SceneState> state;
    int64_t bytes = 0;
    std::list<std::string>::iterator recency;
  };
  std::map<std::string, Held> held_;
  std::list<std::string> recency_;  // most recently used first
  Counts counts_;
};

}  // namespace lact::session
