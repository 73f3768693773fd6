#include "session/render_thread.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>

#include "core/lpips.h"
#include "core/metrics.h"
#include "session/run_turn.h"

namespace lact::session {

RenderThread::RenderThread(Run& run, std::shared_ptr<const SceneState> state, GroundTruth truth, int working_width,
                           int working_height, int threads, Wake wake, NearestInput nearest)
    : run_(run),
      state_(std::move(state)),
      truth_(std::move(truth)),
      nearest_(std::move(nearest)),
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
    pending_.clear();
  }
  wakeup_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t RenderThread::submit(const RenderRequest& request, int channel) {
  uint64_t serial;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    serial = ++serial_;
    pending_[channel] = Pending{serial, request};
  }
  wakeup_.notify_all();
  return serial;
}

std::optional<RenderedView> RenderThread::take(int channel) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = done_.find(channel);
  if (found == done_.end()) return std::nullopt;
  std::optional<RenderedView> out = std::move(found->second);
  done_.erase(found);
  return out;
}

void RenderThread::forget(int channel) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.erase(channel);
  done_.erase(channel);
  if (rendering_ == channel) rendering_ = kForgotten;
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
  return !busy_ && !job_busy_ && pending_.empty() && jobs_.empty();
}

bool RenderThread::job_running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_busy_ || !jobs_.empty();
}

void RenderThread::measure(const Image& image, int view, RenderedView& out) {
  try {
    auto it = truth_cache_.find(view);
    if (it == truth_cache_.end()) it = truth_cache_.emplace(view, truth_(view)).first;
    const Image& truth = it->second;
    out.psnr = psnr_from_mse(mean_squared_error(image, truth));
    out.ssim = ssim(image, truth);
    out.truth = to_rgb8(truth);
    out.error_map = to_rgb8(error_heat_map(image, truth));
    out.measured = true;
    const int nearest = nearest_ ? nearest_(view) : -1;
    if (nearest >= 0) {
      auto input = truth_cache_.find(nearest);
      if (input == truth_cache_.end()) input = truth_cache_.emplace(nearest, truth_(nearest)).first;
      out.nearest_input = nearest;
      out.psnr_nearest_input = psnr(input->second, truth);
    }
    measure_lpips(image, view, nearest, out);
  } catch (const std::exception& e) {
    out.truth_error = e.what();
  }
}

const Lpips::Features& RenderThread::features_of(const Lpips& lpips, int view) {
  auto found = features_cache_.find(view);
  if (found == features_cache_.end())
    found = features_cache_.emplace(view, lpips.features(truth_cache_.at(view))).first;
  return found->second;
}

void RenderThread::measure_lpips(const Image& image, int view, int nearest, RenderedView& out) {
  const Lpips* lpips = run_.lpips();
  if (!lpips) return;
  const Lpips::Features& truth = features_of(*lpips, view);
  out.lpips = lpips->distance(lpips->features(image), truth);
  if (nearest >= 0) out.lpips_nearest_input = lpips->distance(features_of(*lpips, nearest), truth);
}

RenderedView RenderThread::render(uint64_t serial, const RenderRequest& request) {
  RenderedView out;
  out.serial = serial;
  out.request = request;
  try {
    const auto start = std::chrono::steady_clock::now();
    const Image image = run_.render(*state_, request.camera, request.camera.height, request.camera.width);
    out.render_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // As lact render refuses to write it: NaN would reach the client as black pixels and a null PSNR.
    const size_t bad = static_cast<size_t>(
        std::count_if(image.rgb.begin(), image.rgb.end(), [](float v) { return !std::isfinite(v); }));
    if (bad) {
      out.error = "the rendered image holds NaN or infinity in " + std::to_string(bad) + " of " +
                  std::to_string(image.rgb.size()) +
                  " values (the model's weights or the scene state overflow float32)";
      return out;
    }
    out.image = to_rgb8(image);
    const bool at_working_size = request.camera.width == working_width_ && request.camera.height == working_height_;
    if (request.view >= 0 && at_working_size && truth_) measure(image, request.view, out);
  } catch (const std::bad_alloc&) {
    out.error = "out of memory while rendering (try a lower resolution scale)";
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::unique_lock<std::timed_mutex> RenderThread::take_run() {
  return take_run_turn(run_, [this] {
    std::lock_guard<std::mutex> guard(mutex_);
    return stop_;
  });
}

void RenderThread::loop(int threads) {
  if (threads > 0) run_.backend().set_threads(threads);  // OpenMP's count is per thread
  for (;;) {
    std::function<void()> job;
    Pending request{};
    int channel = -1;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wakeup_.wait(lock, [this] { return stop_ || !pending_.empty() || !jobs_.empty(); });
      if (stop_) return;
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
        job_busy_ = true;
      } else {
        // The channel whose newest request is oldest: clients take turns.
        auto next = pending_.begin();
        for (auto it = pending_.begin(); it != pending_.end(); ++it)
          if (it->second.serial < next->second.serial) next = it;
        channel = next->first;
        request = std::move(next->second);
        pending_.erase(next);
        busy_ = true;
        rendering_ = channel;
      }
    }
    if (job) {
      {
        // The Run may be shared (lact serve's scenes); a job reports its own outcome.
        const std::unique_lock<std::timed_mutex> exclusive = take_run();
        if (exclusive.owns_lock()) job();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      job_busy_ = false;
    } else {
      RenderedView view;
      {
        const std::unique_lock<std::timed_mutex> exclusive = take_run();
        if (exclusive.owns_lock()) view = render(request.serial, request.request);  // else stopped: dropped
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (rendering_ == channel) done_[channel] = std::move(view);  // else forgotten while rendering
      busy_ = false;
      rendering_ = -1;
    }
    if (wake_) wake_(channel);
  }
}

}  // namespace lact::session
