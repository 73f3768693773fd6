// The render thread: takes the latest camera each front end's client asked for, renders it with Run::render, and
// publishes the image (as 8-bit RGB, ready to upload or encode). When the camera is exactly a scene view at the
// working size it also measures the render against that view's ground truth (PSNR, SSIM, error map, and the
// nearest-input baseline: the PSNR of the closest input photo as a guess; LPIPS too, with the Run's weights). Requests
// of one channel replace each other: a client never waits and the thread never renders a camera that is already stale.
// Channels (the desktop viewer uses one, `lact serve` one per browser) take turns, the oldest request first. Exclusive
// jobs (a camera path export) run on the same thread, between renders, so the model is never used by two threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/lpips.h"
#include "core/model.h"
#include "pipeline/run.h"
#include "session/pixels.h"

namespace lact::session {

struct RenderRequest {
  Camera camera;    // at the render size
  int view = -1;    // the scene view this camera is exactly (-1: none); measured when at the working size
  int64_t tag = 0;  // the front end's own (returned with the view: how to send it)
};

struct RenderedView {
  uint64_t serial = 0;  // of the request
  RenderRequest request;
  Rgb8 image;
  double render_seconds = 0;
  bool measured = false;  // psnr, ssim, truth and error_map are set
  double psnr = 0, ssim = 0;
  int nearest_input = -1;         // measured on a view that is no input: the input view nearest it
  double psnr_nearest_input = 0;  // and the PSNR of that photo against the truth (the baseline)
  // With LPIPS weights (Run::lpips()): the render's LPIPS against the truth, and that photo's (lower is closer).
  std::optional<double> lpips, lpips_nearest_input;
  Rgb8 truth, error_map;
  std::string error;        // rendering failed (no image)
  std::string truth_error;  // the image is fine, but its ground truth could not be read (not measured)
};

class RenderThread {
 public:
  using GroundTruth = std::function<Image(int view)>;
  using NearestInput = std::function<int(int view)>;  // -1: no baseline for this view
  using Wake = std::function<void(int channel)>;      // a result of `channel` is ready (or a job ended: -1)
  // `working_width/height`: the size at which views are measured. `wake` is called after each result.
  RenderThread(Run& run, std::shared_ptr<const SceneState> state, GroundTruth truth, int working_width,
               int working_height, int threads, Wake wake, NearestInput nearest = {});
  ~RenderThread();  // finishes the render in progress, drops pending work, joins
  RenderThread(const RenderThread&) = delete;
  RenderThread& operator=(const RenderThread&) = delete;

  // Replaces any request of `channel` not yet started; returns its serial.
  uint64_t submit(const RenderRequest& request, int channel = 0);
  // The newest finished view of `channel` not taken yet.
  std::optional<RenderedView> take(int channel = 0);
  // Drops the channel's pending request and finished view (its client left); a render in progress finishes
  // and is dropped when it ends.
  void forget(int channel);
  // Runs `job` on this thread when the current render ends (before further requests).
  void submit_job(std::function<void()> job);
  // Nothing pending, nothing running.
  bool idle() const;
  bool job_running() const;

 private:
  void loop(int threads);
  // The Run, after any other thread using it (lact serve's scenes share one); not owned when stopped meanwhile.
  std::unique_lock<std::timed_mutex> take_run();
  RenderedView render(uint64_t serial, const RenderRequest& request);
  void measure(const Image& image, int view, RenderedView& out);

  Run& run_;  // renders one camera at a time (Run::render); the thread's alone while it runs
  std::shared_ptr<const SceneState> state_;
  GroundTruth truth_;
  NearestInput nearest_;
  int working_width_, working_height_;
  Wake wake_;
  std::map<int, Image> truth_cache_;  // render thread only
  // LPIPS features of the views in truth_cache_ (a test view is measured again each time it is shown; its
  // truth's and nearest input's features do not change). Render thread only.
  std::map<int, Lpips::Features> features_cache_;
  const Lpips::Features& features_of(const Lpips& lpips, int view);
  void measure_lpips(const Image& image, int view, int nearest, RenderedView& out);

  struct Pending {
    uint64_t serial;
    RenderRequest request;
  };
  mutable std::mutex mutex_;
  std::condition_variable wakeup_;
  std::map<int, Pending> pending_;  // per channel
  std::deque<std::function<void()>> jobs_;
  std::map<int, RenderedView> done_;  // per channel
  uint64_t serial_ = 0;
  static constexpr int kForgotten = -2;
  int rendering_ = -1;  // the channel being rendered (-1: none; kForgotten: its client left meanwhile)
  bool busy_ = false, job_busy_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace lact::session
