// Videos rendered on the server (POST /api/video, docs/guide/serve.md): a camera path in the lact camera-path format
// becomes an MP4 under --out, frame by frame on the session's render thread (batches of 8, each a job of its
// own, so the streams keep being served between them) with the model render and ffmpeg writer `lact render
// --path --video` uses. Bounded: frames, size, time, one unfinished job per client (an open stream), a queue limit;
// names chosen here; the file appears complete or not at all (a temporary renamed, never over a file); a job
// is cancelled when its client asks or leaves. The table lives on the network thread.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/camera.h"
#include "serve/camera_message.h"

namespace lact {
class Run;
struct SceneState;
class VideoWriter;
}  // namespace lact

namespace lact::serve {

struct VideoLimits {
  int max_frames = 2000;
  int max_side = 1024;
  int patch = 8;
  int max_jobs = 4;           // queued or rendering, all clients together
  double max_seconds = 3600;  // a job rendering longer fails (checked between batches)
};

// A refused request: the HTTP status and one line.
struct VideoRefusal {
  int status;
  std::string message;
};

// The body of POST /api/video: {"frames": [{c2w, fx, fy, cx, cy, w, h}, ...], "fps": 30 (optional, 1..120)};
// other fields (format, frame, made_by) are ignored. Throws VideoRefusal (400, 413) naming the field.
struct VideoRequest {
  std::vector<Camera> frames;
  int fps = 30;
};
VideoRequest parse_video_request(const std::string& body, const VideoLimits& limits);

class VideoJobs {
 public:
  using Post = std::function<void(std::function<void()>)>;  // run on the network thread
  // Runs a job on the render thread of scene N (false: not ready).
  using RunJob = std::function<bool(int scene, std::function<void()>)>;
  using Notify = std::function<void(int client, const nlohmann::json&)>;  // a job's state, to its client
  VideoJobs(std::string out, VideoLimits limits, Post post, RunJob run_job, Notify notify);
  ~VideoJobs();

  // A job for `client` from `body` rendered by `run` (as `lact render --path` renders: Run::render_cameras, memory
  // checked for each frame size) from `state`, of scene `scene` (whose render thread renders it): its status (with
  // "id"). Throws VideoRefusal: a bad body, over a bound, the client's job unfinished, the queue full, --out
  // unusable.
  nlohmann::json start(int client, const std::string& body, Run& run, std::shared_ptr<const SceneState> state,
                       int scene = 0);
  bool uses_scene(int scene) const;  // a job of it queued or rendering
  // Whether job `id` is `client`'s (the routes answer 404 for another client's).
  bool owns(int id, int client) const;
  // The job's status; nullptr when there is no such job.
  nlohmann::json status(int id) const;
  // Cancels a queued or rendering job: false when there is none.
  bool cancel(int id);
  void client_left(int client);  // its unfinished jobs cancelled
  // The finished video's file; empty when the job is not done (or unknown).
  std::string file(int id) const;
  // Jobs known (unfinished, and the newest finished ones) and the cameras they hold (only unfinished ones do).
  size_t jobs_known() const { return jobs_.size(); }
  size_t cameras_held() const;
  // A job's error as its client sees it (the server's paths left out); unset: as it is.
  std::function<std::string(const std::string&)> shown;

 private:
  struct Job;
  void step(const std::shared_ptr<Job>& job);                 // render thread
  void changed(const std::shared_ptr<Job>& job, bool ended);  // network thread
  void finish(const std::shared_ptr<Job>& job, const std::string& phase, const std::string& error);
  void forget_old();
  void start_next();

  std::string out_;
  VideoLimits limits_;
  Post post_;
  RunJob run_job_;
  Notify notify_;
  std::map<int, std::shared_ptr<Job>> jobs_;
  std::deque<int> queue_;
  int running_ = 0, next_id_ = 1;
};

}  // namespace lact::serve
