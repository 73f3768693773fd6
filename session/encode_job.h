// Encoding the scene (or loading an encoded state) on a worker thread, with progress for the UI: the input
// views are decoded one by one, then the model encodes them layer by layer. Closing the viewer cancels it at
// the next view or layer.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/model.h"
#include "session/scene_source.h"

namespace lact::session {

class EncodeJob {
 public:
  // `wake` is called (from the worker) whenever progress changes or the job ends. Nothing runs before start().
  EncodeJob(const SceneSource& source, int threads, std::function<void()> wake);
  void start();  // once
  ~EncodeJob();  // cancels and joins
  EncodeJob(const EncodeJob&) = delete;
  EncodeJob& operator=(const EncodeJob&) = delete;

  struct Progress {
    std::string stage;    // "reading input views", "encoding", "loading the scene state"
    double fraction = 0;  // of the whole job, in [0, 1]
    double elapsed_s = 0;
  };
  Progress progress() const;
  bool finished() const { return finished_.load(); }

  // After finished(): the state, or the error (one line).
  std::shared_ptr<const SceneState> state() const;
  std::string error() const;
  double encode_seconds() const { return encode_seconds_; }  // Model::encode only (or the state load)

 private:
  void run();
  // The Run, after any other thread using it (lact serve's scenes share one); throws Cancelled when cancelled
  // meanwhile.
  std::unique_lock<std::timed_mutex> take_run();
  void set_progress(const std::string& stage, double fraction);

  const SceneSource& source_;
  int threads_;
  std::function<void()> wake_;
  mutable std::mutex mutex_;
  std::string stage_, error_;
  double fraction_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::shared_ptr<const SceneState> state_;
  double encode_seconds_ = 0;
  std::atomic<bool> cancel_{false}, finished_{false};
  std::thread thread_;
};

}  // namespace lact::session
