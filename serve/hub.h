// The part of `lact serve` every connection shares, on the server's one network thread: the scenes (their
// descriptions, engines and cache: serve/served_scenes.h), the clients' channels, each on one scene (each
// client's newest camera wins; results are handed back on the network thread), side b, the video jobs and the
// count of streams. No network code: the server gives it `post`, which runs a function on the network thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/compare_side.h"
#include "serve/messages.h"
#include "serve/serve_options.h"
#include "serve/served_scenes.h"
#include "serve/shown_paths.h"
#include "serve/video_jobs.h"
#include "session/render_thread.h"
#include "session/scene_source.h"

namespace lact::serve {

class Hub {
 public:
  using Post = std::function<void(std::function<void()>)>;
  using OnView = std::function<void(session::RenderedView)>;
  using OnStatus = std::function<void(const nlohmann::json&)>;
  // `scenes`: open_served_scenes's (one or more). `failed` runs on the network thread when the encode of the only
  // scene fails (the server then stops; with many scenes a failed one is reported to its clients). `compare`:
  // side b (open_compare_source), rendered beside the one scene for every camera a channel submits; null: none.
  Hub(const ServeOptions& options, std::vector<std::unique_ptr<session::SceneSource>> scenes, std::string token,
      Post post, std::function<void(const std::string&)> failed,
      std::unique_ptr<session::SceneSource> compare = nullptr);
  ~Hub();  // stop()
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  void start();  // the first scene's encode (or its state's load), once the server listens
  // Ends the encodes and the render threads (a render in progress finishes); only close_channel may follow.
  void stop();

  const ServeOptions& options() const { return options_; }
  const std::string& token() const { return token_; }  // empty: none required (--no-token)
  const RenderLimits& limits() const { return limits_; }
  int scene_count() const { return scenes_->size(); }
  const session::SceneSource& source(int scene = 0) const { return scenes_->source(scene); }
  bool ready(int scene = 0) const { return scenes_->engine(scene).ready(); }
  // A scene's description with its encode's progress ("status": encoding | ready | failed), "index" and the
  // number of scenes; the status message alone.
  nlohmann::json scene(int index = 0) const;
  nlohmann::json status(int index = 0) const;
  nlohmann::json scene_list() const { return scenes_->list(); }  // GET /api/scenes
  // Why scene N cannot render now (an API request for it), as an HTTP status and one line: 503 while it is encoded
  // or read (started here when it is not in memory), 500 when its encode failed; nullopt when it is ready.
  struct Unavailable {
    int status;
    std::string message;
  };
  std::optional<Unavailable> unavailable(int scene);
  // Why scene N will never render (its encode or load failed), as one line for a client; nullopt otherwise.
  std::optional<std::string> failure(int scene) const;
  // A message as clients see it: no path of this machine (serve/shown_paths.h).
  std::string shown(const std::string& message) const { return shown_paths_(message); }

  // A client's channel, on scene 0: `on_view` gets each result of its requests, `on_status` its scene's encode
  // progress (may be empty), `on_side_b` side b's results when comparing (empty: the channel asks side a only).
  // Network thread only.
  int open_channel(OnView on_view, OnStatus on_status = {}, OnView on_side_b = {});
  void close_channel(int channel);  // its pending render dropped, a render in progress ignored
  // Moves the channel to `scene` (its pending request on the old one dropped, the new one's encode or load
  // started): the scene message to send it.
  nlohmann::json select_scene(int channel, int scene);
  int channel_scene(int channel) const;
  // The channel's newest request on its scene (before the scene is ready: held, and sent when it is), to side a
  // when `side_a`, and to side b too when comparing and the channel has on_side_b.
  void submit(int channel, const session::RenderRequest& request, bool side_a = true, bool side_b = true);
  const CompareSide* compare() const { return compare_.get(); }

  // Videos rendered on the server (serve/video_jobs.h); a job's client is a stream's channel, told of its
  // progress by the channel's on_status and cancelling the job when it closes.
  VideoJobs& videos() { return *videos_; }
  bool has_channel(int channel) const { return channels_.count(channel) > 0; }
  // A video job for `client` (an open stream) from a camera path body, of the body's "scene" (default: the
  // client's); VideoRefusal when refused.
  nlohmann::json start_video(int client, const std::string& body);

  // Streams (WebSocket clients) open: the server refuses one past --max-clients.
  int streams = 0;

 private:
  void scene_changed(int scene);                // network thread
  nlohmann::json progress_of(int index) const;  // status() with the paths in full (for the terminal)
  void open_compare(std::unique_ptr<session::SceneSource> compare);
  void deliver(int scene, int channel, session::RenderedView view);
  bool pinned(int scene) const;

  const ServeOptions& options_;
  std::string token_;
  Post post_;
  std::function<void(const std::string&)> failed_;
  RenderLimits limits_;
  ShownPaths shown_paths_;
  std::vector<session::SceneFrame> frames_;  // per scene
  std::unique_ptr<ServedScenes> scenes_;
  std::unique_ptr<VideoJobs> videos_;
  std::unique_ptr<CompareSide> compare_;
  std::map<int, std::string> last_printed_;  // per scene
  struct Channel {
    OnView on_view;
    OnStatus on_status;
    OnView on_side_b;
    int scene = 0;
  };
  std::map<int, Channel> channels_;
  int next_channel_ = 0;
};

}  // namespace lact::serve
