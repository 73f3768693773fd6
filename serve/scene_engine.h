// One scene's engine in `lact serve`: its encode job (or its state file's load), then its render thread, with the
// requests that came before it was ready held and sent when it is. Side b of a comparison is one, and each of the
// served scenes is one; the scenes share one Run (one model, one device), which their threads take in turn
// (Run::exclusive). An engine can be released (its state and render thread dropped, to fit --cache-memory) and
// started again, which then reads its state file. No network code: results come back on the network thread
// through `post`.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "session/encode_job.h"
#include "session/render_thread.h"
#include "session/scene_source.h"

namespace lact::serve {

class SceneEngine {
 public:
  using Post = std::function<void(std::function<void()>)>;
  using Deliver = std::function<void(int channel, session::RenderedView view)>;  // network thread
  using Changed = std::function<void()>;  // network thread: the encode's progress changed, or it ended
  SceneEngine(session::SceneSource& source, int encode_threads, int render_threads, Post post, Deliver deliver,
              Changed changed);
  ~SceneEngine();  // stop()
  SceneEngine(const SceneEngine&) = delete;
  SceneEngine& operator=(const SceneEngine&) = delete;

  enum class Stage { idle, encoding, ready, failed };
  Stage stage() const;
  bool ready() const { return renderer_ != nullptr; }
  void start();        // the encode (or the state's load); nothing when already started
  void release();      // back to idle: the render thread ends (a render in progress finishes) and the state is dropped
  void stop_encode();  // an encode in progress cancelled (a render of another scene may wait on the Run for it)
  void stop();         // stop_encode(), then release()

  // {"status": idle | encoding | ready | failed, "stage", "fraction", "elapsed_s", "encode_s" when ready,
  // "error" when failed}.
  nlohmann::json progress() const;
  std::string error() const;  // failed: the encode's error
  std::shared_ptr<const SceneState> state() const;
  const session::SceneSource& source() const { return source_; }

  void submit(int channel, const session::RenderRequest& request);  // held until ready
  void forget(int channel);
  // The channel waits for a frame of this scene: its request held until ready, or on the render thread (pending or
  // rendering) and not yet delivered. Such a scene is not released (its frame would be lost).
  bool holds(int channel) const { return held_.count(channel) > 0 || awaiting_.count(channel) > 0; }
  // Runs `job` on the render thread between renders; false when not ready.
  bool submit_job(std::function<void()> job);

 private:
  void encode_changed();  // network thread
  void take(int channel);

  session::SceneSource& source_;
  int encode_threads_, render_threads_;
  Post post_;
  Deliver deliver_;
  Changed changed_;
  std::unique_ptr<session::EncodeJob> encode_;
  std::unique_ptr<session::RenderThread> renderer_;
  std::map<int, session::RenderRequest> held_;
  std::map<int, uint64_t> awaiting_;  // channel -> the serial of its newest request on the render thread
  // Each start() is a generation: a notice of an encode released since (still on its way to the network thread)
  // is told from the current one's and ignored.
  int generation_ = 0;
};

}  // namespace lact::serve
