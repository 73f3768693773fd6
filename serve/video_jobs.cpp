#include "serve/video_jobs.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>

#include "datasets/camera_path_io.h"
#include "pipeline/run.h"
#include "pipeline/video_writer.h"
#include "system/error.h"
#include "system/file_io.h"

namespace fs = std::filesystem;

namespace lact::serve {

namespace {

constexpr size_t kBatch = 8;  // frames rendered together, as lact render --path renders them
// Finished jobs whose status (and download) stay answered, whatever the jobs before them do; an older one is
// forgotten and its video file removed, so --out holds at most this many of this server's videos.
constexpr size_t kFinishedKept = 64;

[[noreturn]] void refuse(int status, const std::string& message) { throw VideoRefusal{status, message}; }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void check_frame(const Camera& c, size_t index, const Camera& first, const VideoLimits& limits) {
  const std::string where = "frames[" + std::to_string(index) + "]";
  if (c.width > limits.max_side || c.height > limits.max_side)
    refuse(400, where + ": size " + std::to_string(c.height) + "x" + std::to_string(c.width) + " is over --max-side " +
                    std::to_string(limits.max_side));
  if (c.width % limits.patch || c.height % limits.patch)
    refuse(400, where + ": size " + std::to_string(c.height) + "x" + std::to_string(c.width) +
                    " is not divisible by the patch size " + std::to_string(limits.patch));
  if (c.width != first.width || c.height != first.height)
    refuse(400, where + ": the frames differ in size; a video needs one size");
}

}  // namespace

VideoRequest parse_video_request(const std::string& body, const VideoLimits& limits) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(body);
  } catch (const std::exception&) {
    refuse(400, "body: not JSON (a lact camera path: {\"frames\": [{c2w, fx, fy, cx, cy, w, h}, ...]})");
  }
  if (!json.is_object() || !json.contains("frames") || !json.at("frames").is_array())
    refuse(400, "body: not a camera path (expected {\"frames\": [{c2w, fx, fy, cx, cy, w, h}, ...]})");
  const nlohmann::json& frames = json.at("frames");
  if (frames.empty()) refuse(400, "frames: the path has no frames");
  if (frames.size() > static_cast<size_t>(limits.max_frames))
    refuse(413, "frames: " + std::to_string(frames.size()) + " frames, at most " + std::to_string(limits.max_frames));
  VideoRequest out;
  if (json.contains("fps")) {
    const nlohmann::json& fps = json.at("fps");
    if (!fps.is_number_integer() || fps.get<int64_t>() < 1 || fps.get<int64_t>() > 120)
      refuse(400, "fps: an integer from 1 to 120");
    out.fps = fps.get<int>();
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    try {
      out.frames.push_back(camera_from_json(frames[i], "frames[" + std::to_string(i) + "]"));
    } catch (const std::exception& e) {
      refuse(400, e.what());
    }
    check_frame(out.frames.back(), i, out.frames.front(), limits);
  }
  return out;
}

struct VideoJobs::Job {
  int id = 0, client = -1, fps = 30, scene = 0;
  size_t frame_count = 0;
  int width = 0, height = 0;
  std::vector<Camera> frames;  // dropped when the job ends, as is the state: a finished job holds its status only
  Run* run = nullptr;          // used on the render thread only
  std::shared_ptr<const SceneState> state;
  std::string name, path;
  // Network thread only.
  std::string phase = "queued", error;  // queued | rendering | done | failed | cancelled
  double started = 0, seconds = 0;
  // Render thread only.
  std::unique_ptr<VideoWriter> writer;
  // Both.
  std::atomic<bool> cancelled{false}, timed_out{false};
  std::atomic<size_t> done{0};
  bool finished() const { return phase == "done" || phase == "failed" || phase == "cancelled"; }
};

VideoJobs::VideoJobs(std::string out, VideoLimits limits, Post post, RunJob run_job, Notify notify)
    : out_(std::move(out)),
      limits_(limits),
      post_(std::move(post)),
      run_job_(std::move(run_job)),
      notify_(std::move(notify)) {}

VideoJobs::~VideoJobs() = default;

nlohmann::json VideoJobs::start(int client, const std::string& body, Run& run, std::shared_ptr<const SceneState> state,
                                int scene) {
  VideoRequest request = parse_video_request(body, limits_);
  int unfinished = 0;
  for (const auto& [id, job] : jobs_) {
    if (job->finished()) continue;
    ++unfinished;
    if (job->client == client)
      refuse(409, "this client's video " + std::to_string(id) +
                      " is not finished: one job per client (cancel it "
                      "with DELETE /api/video/" +
                      std::to_string(id) + ")");
  }
  if (unfinished >= limits_.max_jobs)
    refuse(503, "the video queue is full (" + std::to_string(limits_.max_jobs) + " jobs): try again later");
  std::error_code error;
  fs::create_directories(out_, error);
  if (error || !fs::is_directory(out_)) refuse(500, "--out: cannot create the video folder (" + error.message() + ")");
  auto job = std::make_shared<Job>();
  job->id = next_id_++, job->client = client, job->fps = request.fps, job->frame_count = request.frames.size();
  job->width = request.frames[0].width, job->height = request.frames[0].height;
  job->frames = std::move(request.frames);
  job->run = &run, job->state = std::move(state), job->scene = scene;
  // The server's own name, never one from the client; a name taken (a file of an earlier server) is skipped.
  for (int k = 0;; ++k) {
    job->name = "video_" + std::to_string(job->id) + (k ? "_" + std::to_string(k) : "") + ".mp4";
    job->path = (fs::path(out_) / job->name).string();
    if (!fs::exists(fs::symlink_status(job->path, error))) break;
  }
  jobs_[job->id] = job;
  queue_.push_back(job->id);
  start_next();
  return status(job->id);
}

void VideoJobs::start_next() {
  while (!running_ && !queue_.empty()) {
    std::shared_ptr<Job> job = jobs_.at(queue_.front());
    queue_.pop_front();
    running_ = job->id;
    job->phase = "rendering", job->started = now_s();
    if (!run_job_(job->scene, [this, job] { step(job); })) finish(job, "failed", "the scene is not ready");
  }
}

// Network thread: the job ended. What only rendering needed is dropped, and the oldest finished jobs past
// kFinishedKept are forgotten (cancelled jobs piled up behind one long job before: each kept its cameras).
void VideoJobs::finish(const std::shared_ptr<Job>& job, const std::string& phase, const std::string& error) {
  job->phase = phase, job->error = error;
  if (job->started > 0) job->seconds = now_s() - job->started;
  std::vector<Camera>().swap(job->frames);
  job->state.reset();
  if (running_ == job->id) running_ = 0;
  changed(job, true);
  forget_old();
}

void VideoJobs::forget_old() {
  size_t finished = 0;
  for (const auto& [id, job] : jobs_) finished += job->finished();
  for (auto it = jobs_.begin(); it != jobs_.end() && finished > kFinishedKept;) {
    if (!it->second->finished()) {
      ++it;
      continue;
    }
    std::error_code ignored;
    if (it->second->phase == "done") fs::remove(it->second->path, ignored);  // its download is gone with it
    it = jobs_.erase(it);
    --finished;
  }
}

size_t VideoJobs::cameras_held() const {
  size_t held = 0;
  for (const auto& [id, job] : jobs_) held += job->frames.size();
  return held;
}

// One batch on the render thread; the next is asked for from the network thread, so renders for the streams
// take turns with it.
void VideoJobs::step(const std::shared_ptr<Job>& job) {
  std::string phase, error;
  try {
    if (job->cancelled) {
      job->writer.reset();  // ffmpeg stopped, its temporary removed
      phase = job->timed_out ? "failed" : "cancelled";
      if (job->timed_out) error = "over --max-video-seconds " + std::to_string(static_cast<int>(limits_.max_seconds));
    } else {
      if (!job->writer) {
        require_new_file(job->path);  // the rename never replaces a file
        job->writer = std::make_unique<VideoWriter>(job->path, job->frames, job->fps);
      }
      const size_t begin = job->done, end = std::min(job->frames.size(), begin + kBatch);
      const std::vector<Camera> batch(job->frames.begin() + begin, job->frames.begin() + end);
      const std::vector<Image> images =
          job->run->render_cameras(*job->state, batch, "video frame " + std::to_string(begin));
      for (size_t i = 0; i < images.size(); ++i) {
        check_rendered_image(images[i], "frame " + std::to_string(begin + i));
        job->writer->add_frame(images[i]);
      }
      job->done = end;
      if (end == job->frames.size()) {
        job->writer->finish();
        job->writer.reset();
        phase = "done";
      }
    }
  } catch (const std::exception& e) {
    job->writer.reset();
    phase = "failed", error = e.what();
  }
  post_([this, job, phase, error] {
    if (!phase.empty()) {
      finish(job, phase, error);
      return start_next();
    }
    if (now_s() - job->started > limits_.max_seconds) job->timed_out = true, job->cancelled = true;
    changed(job, false);
    if (!run_job_(job->scene, [this, job] { step(job); })) {
      finish(job, "failed", "the server stopped");
      start_next();
    }
  });
}

void VideoJobs::changed(const std::shared_ptr<Job>& job, bool) { notify_(job->client, status(job->id)); }

nlohmann::json VideoJobs::status(int id) const {
  auto found = jobs_.find(id);
  if (found == jobs_.end()) return nullptr;
  const Job& job = *found->second;
  nlohmann::json out{{"type", "video"},         {"id", job.id},
                     {"state", job.phase},      {"frames", job.frame_count},
                     {"done", job.done.load()}, {"progress", static_cast<double>(job.done) / job.frame_count},
                     {"width", job.width},      {"height", job.height},
                     {"fps", job.fps}};
  if (job.phase == "done") {
    out["download"] = "/api/video/" + std::to_string(job.id) + ".mp4?client=" + std::to_string(job.client);
    out["file"] = job.name;
  }
  if (job.finished()) out["seconds"] = job.seconds;
  if (!job.error.empty()) out["error"] = shown ? shown(job.error) : job.error;
  return out;
}

bool VideoJobs::owns(int id, int client) const {
  auto found = jobs_.find(id);
  return found != jobs_.end() && found->second->client == client;
}

bool VideoJobs::cancel(int id) {
  auto found = jobs_.find(id);
  if (found == jobs_.end() || found->second->finished()) return false;
  const std::shared_ptr<Job> job = found->second;
  job->cancelled = true;
  if (job->phase == "queued") {  // never started: nothing on disk
    queue_.erase(std::find(queue_.begin(), queue_.end(), id));
    finish(job, "cancelled", "");
  }
  return true;
}

bool VideoJobs::uses_scene(int scene) const {
  for (const auto& [id, job] : jobs_)
    if (job->scene == scene && !job->finished()) return true;
  return false;
}

void VideoJobs::client_left(int client) {
  std::vector<int> ids;
  for (const auto& [id, job] : jobs_)
    if (job->client == client && !job->finished()) ids.push_back(id);
  for (int id : ids) cancel(id);
}

std::string VideoJobs::file(int id) const {
  auto found = jobs_.find(id);
  return found != jobs_.end() && found->second->phase == "done" ? found->second->path : std::string();
}

}  // namespace lact::serve
