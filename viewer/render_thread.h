// The render thread: takes the latest camera the UI asked for, renders it with Run::render, and publishes
// the image (as 8-bit RGB, ready to upload). When the camera is exactly a scene view at the working size it
// also measures the render against that view's ground truth (PSNR, SSIM, error map). Requests replace each
// other: the UI never waits and the thread never renders a camera that is already stale. Exclusive jobs (a
// camera path export) run on the same thread, between renders, so the model is never used by two threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/model.h"
#include "pipeline/run.h"
#include "viewer/pixels.h"

namespace lact::viewer {

struct RenderRequest {
  Camera camera;  // at the render size
  int view = -1;  // the scene view this camera is exactly (-1: none); measured when at the working size
};

struct RenderedView {
  uint64_t serial = 0;  // of the request
  RenderRequest request;
  Rgb8 image;
  double render_seconds = 0;
  bool measured = false;  // psnr, ssim, truth and error_map are set
  double psnr = 0, ssim = 0;
  Rgb8 truth, error_map;
  std::string error;        // rendering failed (no image)
  std::string truth_error;  // the image is fine, but its ground truth could not be read (not measured)
};

class RenderThread {
 public:
  using GroundTruth = std::function<Image(int view)>;
  // `working_width/height`: the size at which views are measured. `wake` is called after each result.
  RenderThread(Run& run, std::shared_ptr<const SceneState> state, GroundTruth truth, int working_width,
               int working_height, int threads, std::function<void()> wake);
  ~RenderThread();  // finishes the render in progress, drops pending work, joins
  RenderThread(const RenderThread&) = delete;
  RenderThread& operator=(const RenderThread&) = delete;

  // Replaces any request not yet started; returns its serial.
  uint64_t submit(const RenderRequest& request);
  // The newest finished view not taken yet.
  std::optional<RenderedView> take();
  // Runs `job` on this thread when the current render ends (before further requests).
  void submit_job(std::function<void()> job);
  // Nothing pending, nothing running.
  bool idle() const;
  bool job_running() const;

 private:
  void loop(int threads);
  RenderedView render(uint64_t serial, const RenderRequest& request);

  Run& run_;  // renders one camera at a time (Run::render); the thread's alone while it runs
  std::shared_ptr<const SceneState> state_;
  GroundTruth truth_;
  int working_width_, working_height_;
  std::function<void()> wake_;
  std::map<int, Image> truth_cache_;  // render thread only

  mutable std::mutex mutex_;
  std::condition_variable wakeup_;
  std::optional<std::pair<uint64_t, RenderRequest>> pending_;
  std::deque<std::function<void()>> jobs_;
  std::optional<RenderedView> done_;
  uint64_t serial_ = 0;
  bool busy_ = false, job_busy_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace lact::viewer
