#include "viewer/render_thread.h"

#include <chrono>
#include <new>

#include "core/metrics.h"

namespace lact::viewer {

RenderThread::RenderThread(Run& run, std::shared_ptr<const SceneState> state, GroundTruth truth, int working_width,
                           int working_height, int threads, std::function<void()> wake)
    : run_(run),
      state_(std::move(state)),
      truth_(std::move(truth)),
      working_width_(working_width),
      working_height_(working_height),
      wake_(std::move(wake)) {
  thread_ = std::thread([this, threads] { loop(threads); });
}

RenderThread::~RenderThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    jobs_.clear();
    pending_.reset();
  }
  wakeup_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t RenderThread::submit(const RenderRequest& request) {
  uint64_t serial;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    serial = ++serial_;
    pending_ = std::make_pair(serial, request);
  }
  wakeup_.notify_all();
  return serial;
}

std::optional<RenderedView> RenderThread::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<RenderedView> out = std::move(done_);
  done_.reset();
  return out;
}

void RenderThread::submit_job(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wakeup_.notify_all();
}

bool RenderThread::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !busy_ && !job_busy_ && !pending_ && jobs_.empty();
}

bool RenderThread::job_running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_busy_ || !jobs_.empty();
}

RenderedView RenderThread::render(uint64_t serial, const RenderRequest& request) {
  RenderedView out;
  out.serial = serial;
  out.request = request;
  try {
    const auto start = std::chrono::steady_clock::now();
    const Image image = run_.render(*state_, request.camera, request.camera.height, request.camera.width);
    out.render_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.image = to_rgb8(image);
    const bool at_working_size = request.camera.width == working_width_ && request.camera.height == working_height_;
    if (request.view >= 0 && at_working_size && truth_) {
      try {
        auto it = truth_cache_.find(request.view);
        if (it == truth_cache_.end()) it = truth_cache_.emplace(request.view, truth_(request.view)).first;
        const Image& truth = it->second;
        out.psnr = psnr_from_mse(mean_squared_error(image, truth));
        out.ssim = ssim(image, truth);
        out.truth = to_rgb8(truth);
        out.error_map = to_rgb8(error_heat_map(image, truth));
        out.measured = true;
      } catch (const std::exception& e) {
        out.truth_error = e.what();
      }
    }
  } catch (const std::bad_alloc&) {
    out.error = "out of memory while rendering (try a lower resolution scale)";
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

void RenderThread::loop(int threads) {
  if (threads > 0) run_.backend().set_threads(threads);  // OpenMP's count is per thread
  for (;;) {
    std::function<void()> job;
    std::pair<uint64_t, RenderRequest> request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wakeup_.wait(lock, [this] { return stop_ || pending_ || !jobs_.empty(); });
      if (stop_) return;
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
        job_busy_ = true;
      } else {
        request = std::move(*pending_);
        pending_.reset();
        busy_ = true;
      }
    }
    if (job) {
      job();  // reports its own outcome
      std::lock_guard<std::mutex> lock(mutex_);
      job_busy_ = false;
    } else {
      RenderedView view = render(request.first, request.second);
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = std::move(view);
      busy_ = false;
    }
    if (wake_) wake_();
  }
}

}  // namespace lact::viewer
