// The scenes one `lact serve` shows (docs/guide/serve.md: many scenes): one per --state file, or one per scene of
// --data when it holds several and no --scene is given, all through one Run (one model, one device). A scene's
// state is encoded (or read from its state file) on first use, one scene at a time, and the states are kept
// within --cache-memory: when a state is ready and the states held pass the bound, the least recently used ones
// are released (never one a video job renders, one a client waits for, or one not yet saved). A state encoded
// here is first saved under --out/states/, so a released scene is read back from its file, never encoded again.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/scene_engine.h"
#include "serve/serve_options.h"

namespace lact::serve {

// The scenes `options` names (Error naming the flag otherwise): several --state files, the scenes of --data
// (without --scene), or the one scene of the usual flags. Each found state file under --out/states/ that records
// the same model, scene, inputs and size becomes the scene's state file (not encoded again); one that records
// others is left alone (a warning; the scene is then not saved).
std::vector<std::unique_ptr<session::SceneSource>> open_served_scenes(const ServeOptions& options);

// Which held states to release so that the rest fit `bound` bytes: the least recently used first, never `keep`
// nor one `pinned` says. `held[i]`: scene i's state bytes (0: not held); `last_used[i]`: larger is more recent.
std::vector<int> states_to_release(const std::vector<int64_t>& held, const std::vector<uint64_t>& last_used,
                                   int64_t bound, int keep, const std::function<bool(int)>& pinned);

class ServedScenes {
 public:
  using Deliver = std::function<void(int scene, int channel, session::RenderedView view)>;  // network thread
  using Changed = std::function<void(int scene)>;  // network thread: progress, ready, failed, released
  ServedScenes(std::vector<std::unique_ptr<session::SceneSource>> sources, const ServeOptions& options,
               SceneEngine::Post post, Deliver deliver, Changed changed);
  ~ServedScenes();  // stop()
  ServedScenes(const ServedScenes&) = delete;
  ServedScenes& operator=(const ServedScenes&) = delete;

  int size() const { return static_cast<int>(scenes_.size()); }
  const session::SceneSource& source(int scene) const { return *scenes_.at(scene).source; }
  SceneEngine& engine(int scene) { return *scenes_.at(scene).engine; }
  const SceneEngine& engine(int scene) const { return *scenes_.at(scene).engine; }
  // The scene is used now (the most recent); its encode (or its state's load) starts when it is idle: at once
  // when no other scene is encoding, else when those before it are done.
  void use(int scene);
  void stop();                   // every encode cancelled, then every render thread
  bool queued(int scene) const;  // waiting for another scene's encode
  // Set by the Hub: a scene that must stay in memory now (a video job renders it, a client's request waits).
  std::function<bool(int scene)> pinned;

  // GET /api/scenes: {"scenes": [{"index", "name", "views", "size", "status", "state_file", "state_bytes"}],
  // "cache": cache()}.
  nlohmann::json list() const;
  // {"memory_bytes" (the bound), "held_bytes", "held", "encodes", "loads", "releases"}.
  nlohmann::json cache() const;

 private:
  struct Scene {
    std::unique_ptr<session::SceneSource> source;
    std::unique_ptr<SceneEngine> engine;
    std::string spill_file;  // where a state encoded here is saved (empty: not saved)
    bool saving = false;     // its save job is queued or running: not released until it ends
    bool counted = false;    // its ready state was counted (an encode or a load)
    uint64_t last_used = 0;
    int64_t bytes = 0;  // of the state held (0: none)
  };
  void engine_changed(int scene);  // network thread
  void start_next();
  void save(int scene);  // queued on its render thread
  void saved(int scene, const std::string& error);
  void fit(int keep);
  int64_t held_bytes() const;

  const ServeOptions& options_;
  SceneEngine::Post post_;
  Changed changed_;
  std::vector<Scene> scenes_;
  std::deque<int> waiting_;  // scenes to encode or load, in order
  int encoding_ = -1;
  uint64_t clock_ = 0;
  int encodes_ = 0, loads_ = 0, releases_ = 0;
};

}  // namespace lact::serve
