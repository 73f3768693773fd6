// The part of `lact serve` every connection shares, on the server's one network thread: the scene (its
// description, the encode job and its progress), the render thread and the clients' channels on it (each
// client's newest camera wins; results are handed back on the network thread), and the count of streams. No
// network code: the server gives it `post`, which runs a function on the network thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/compare_side.h"
#include "serve/messages.h"
#include "serve/serve_options.h"
#include "serve/video_jobs.h"
#include "session/encode_job.h"
#include "session/render_thread.h"
#include "session/scene_source.h"

namespace lact::serve {

class Hub {
 public:
  using Post = std::function<void(std::function<void()>)>;
  using OnView = std::function<void(session::RenderedView)>;
  using OnStatus = std::function<void(const nlohmann::json&)>;
  // `failed` runs on the network thread when the encode fails (the server then stops). `compare`: side b
  // (open_compare_source), rendered beside the scene for every camera a channel submits; null: none.
  Hub(const ServeOptions& options, session::SceneSource& source, std::string token, Post post,
      std::function<void(const std::string&)> failed, std::unique_ptr<session::SceneSource> compare = nullptr);
  ~Hub();  // stop()
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  void start();  // the encode (or the state's load), once the server listens
  // Ends the render thread (a render in progress finishes) and the encode; only close_channel may follow.
  void stop();

  const ServeOptions& options() const { return options_; }
  const std::string& token() const { return token_; }  // empty: none required (--no-token)
  const RenderLimits& limits() const { return limits_; }
  const session::SceneSource& source() const { return source_; }
  bool ready() const { return renderer_ != nullptr; }
  // The scene description with the encode's progress ("status": encoding | ready | failed).
  nlohmann::json scene() const;
  nlohmann::json status() const;

  // A client's channel: `on_view` gets each result of its requests, `on_status` the encode's progress (may be
  // empty), `on_side_b` side b's results when comparing (empty: the channel asks side a only). Network thread only.
  int open_channel(OnView on_view, OnStatus on_status = {}, OnView on_side_b = {});
  void close_channel(int channel);  // its pending render dropped, a render in progress ignored
  // The channel's newest request (before the scene is ready: held, and sent when it is), to side a when
  // `side_a`, and to side b too when comparing and the channel has on_side_b.
  void submit(int channel, const session::RenderRequest& request, bool side_a = true, bool side_b = true);
  const CompareSide* compare() const { return compare_.get(); }

  // Videos rendered on the server (serve/video_jobs.h); a job's client is a stream's channel, told of its
  // progress by the channel's on_status and cancelling the job when it closes.
  VideoJobs& videos() { return *videos_; }
  bool has_channel(int channel) const { return channels_.count(channel) > 0; }
  // A video job for `client` (an open stream) from a camera path body; VideoRefusal when refused.
  nlohmann::json start_video(int client, const std::string& body);

  // Streams (WebSocket clients) open: the server refuses one past --max-clients.
  int streams = 0;

 private:
  void encode_changed();  // network thread
  void open_compare(std::unique_ptr<session::SceneSource> compare);
  void deliver(int channel);

  const ServeOptions& options_;
  session::SceneSource& source_;
  std::string token_;
  Post post_;
  std::function<void(const std::string&)> failed_;
  RenderLimits limits_;
  session::SceneFrame frame_;
  nlohmann::json description_;
  std::unique_ptr<session::EncodeJob> encode_;
  std::unique_ptr<session::RenderThread> renderer_;
  std::unique_ptr<VideoJobs> videos_;
  std::unique_ptr<CompareSide> compare_;
  std::atomic<bool> encode_posted_{false};
  std::string last_printed_;
  struct Channel {
    OnView on_view;
    OnStatus on_status;
    OnView on_side_b;
  };
  std::map<int, Channel> channels_;
  std::map<int, session::RenderRequest> held_;  // requests before the scene was ready
  int next_channel_ = 0;
};

}  // namespace lact::serve
