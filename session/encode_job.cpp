#include "session/encode_job.h"

#include <chrono>
#include <new>

#include "core/scene_state_io.h"
#include "session/run_turn.h"
#include "system/clock.h"

namespace lact::session {

namespace {
struct Cancelled {};
}  // namespace

EncodeJob::EncodeJob(const SceneSource& source, int threads, std::function<void()> wake)
    : source_(source), threads_(threads), wake_(std::move(wake)), stage_("starting") {}

void EncodeJob::start() {
  if (thread_.joinable() || finished_) return;
  start_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

EncodeJob::~EncodeJob() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void EncodeJob::set_progress(const std::string& stage, double fraction) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = stage;
    fraction_ = fraction;
  }
  if (wake_) wake_();
}

EncodeJob::Progress EncodeJob::progress() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {stage_, fraction_, thread_.joinable() ? seconds_since(start_) : 0.0};
}

std::shared_ptr<const SceneState> EncodeJob::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

std::string EncodeJob::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

std::unique_lock<std::timed_mutex> EncodeJob::take_run() {
  std::unique_lock<std::timed_mutex> lock = take_run_turn(*source_.run, [this] { return cancel_.load(); });
  if (!lock.owns_lock()) throw Cancelled{};
  return lock;
}

void EncodeJob::run() {
  const SceneSource& source = source_;
  // OpenMP's thread count is per thread: set it on this one.
  if (threads_ > 0) source.run->backend().set_threads(threads_);
  const Model& model = *source.model;
  std::shared_ptr<SceneState> state;
  std::string error;
  try {
    if (!source.state_path.empty()) {
      set_progress("loading the scene state", 0);
      const std::unique_lock<std::timed_mutex> exclusive = take_run();
      const auto start = std::chrono::steady_clock::now();
      LoadedSceneState loaded = load_scene_state(source.state_path, model.weights(), source.run->backend());
      encode_seconds_ = seconds_since(start);
      state = std::make_shared<SceneState>(std::move(loaded.state));
    } else {
      // Reading the views is about a fifth of the bar, encoding the rest (per layer, through the observer).
      const size_t n = source.selection.inputs.size();
      std::vector<PosedImage> inputs;
      for (size_t i = 0; i < n; ++i) {
        if (cancel_) throw Cancelled{};
        set_progress("reading input view " + std::to_string(i + 1) + " of " + std::to_string(n), 0.2 * i / n);
        for (PosedImage& v : source.input_view(static_cast<int>(i))) inputs.push_back(std::move(v));
      }
      const int layers = model.config().layers;
      set_progress("encoding " + std::to_string(n) + " views: layer 1 of " + std::to_string(layers), 0.2);
      int done = 0;
      const std::unique_lock<std::timed_mutex> exclusive = take_run();  // after another scene's render or encode
      const auto start = std::chrono::steady_clock::now();
      // Through the Run: the memory of the encode checked once, naming --inputs, before anything is allocated.
      SceneState encoded = source.run->encode_views(inputs, "--inputs", [&](const std::string& name, const Tensor&) {
        if (cancel_) throw Cancelled{};
        if (name.rfind("encode_block", 0) != 0) return;
        ++done;
        set_progress("encoding " + std::to_string(n) + " views: layer " + std::to_string(std::min(done + 1, layers)) +
                         " of " + std::to_string(layers),
                     0.2 + 0.8 * done / layers);
      });
      encode_seconds_ = seconds_since(start);
      state = std::make_shared<SceneState>(std::move(encoded));
    }
  } catch (const Cancelled&) {
    error = "cancelled";
  } catch (const std::bad_alloc&) {
    error = "out of memory (try fewer views, a smaller --size or a smaller model)";
  } catch (const std::exception& e) {
    error = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = state;
    error_ = error;
    stage_ = error.empty() ? "ready" : "failed";
    fraction_ = 1;
  }
  finished_ = true;
  if (wake_) wake_();
}

}  // namespace lact::session
