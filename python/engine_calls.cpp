#include "python/engine_calls.h"

#include <chrono>
#include <cmath>
#include <mutex>

#include "core/error.h"
#include "pipeline/backend_options.h"
#include "pipeline/scene_selection.h"

namespace lact::python {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Counts the renders running at once for as long as it lives.
class RenderCount {
 public:
  explicit RenderCount(Engine& engine) : engine_(engine) {
    const int now = ++engine_.renders_running;
    for (int most = engine_.most_renders_running.load();
         now > most && !engine_.most_renders_running.compare_exchange_weak(most, now);) {
    }
  }
  ~RenderCount() { --engine_.renders_running; }
  RenderCount(const RenderCount&) = delete;
  RenderCount& operator=(const RenderCount&) = delete;

 private:
  Engine& engine_;
};

void check_rendered_values(const float* values, size_t count) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += !std::isfinite(values[i]);
  if (bad)
    throw Error("render", "the rendered images hold NaN or infinity in " + std::to_string(bad) + " of " +
                              std::to_string(count) +
                              " values (the model's weights or the scene state overflow float32)");
}

// OpenMP's thread count belongs to the calling thread (a Python thread starts with the library default): set
// on each thread that calls the engine, again whenever another count was set there since (-1: unknown).
thread_local int threads_set_here = -1;

void use_threads_here(Engine& engine) {
  if (engine.threads <= 0 || threads_set_here == engine.threads) return;
  engine.backend().set_threads(engine.threads);
  threads_set_here = engine.threads;
}

}  // namespace

std::shared_ptr<Engine> open_engine(const std::string& path, const std::string& device, const std::string& precision,
                                    int threads) {
  auto engine = std::make_shared<Engine>();
  CommonOptions options;
  options.backend = device;
  options.precision = precision;
  options.threads = threads;
  engine->run = std::make_unique<Run>(options);
  engine->run->load_model(path);
  engine->path = path;
  engine->device = device;
  engine->threads = threads;
  threads_set_here = -1;  // the backend set its count on this thread
  return engine;
}

SceneState encode_views(Engine& engine, const std::vector<Camera>& cameras, const PixelView& pixels,
                        const std::function<void()>& between_layers) {
  const std::unique_lock<std::shared_mutex> hold(engine.lock);
  use_threads_here(engine);
  const auto start = Clock::now();
  // The model's observer is called between layers (observing also computes the last layer's outputs, which the
  // state does not need: about 1/(2 layers) more work).
  Model::Observer observer;
  if (between_layers) observer = [&](const std::string&, const Tensor&) { between_layers(); };
  SceneState state = engine.run->encode_views(cameras, pixels, "images", observer);
  engine.last_engine_s = seconds_since(start);
  return state;
}

void render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras, float* out) {
  std::shared_lock<std::shared_mutex> shared(engine.lock, std::defer_lock);
  std::unique_lock<std::shared_mutex> alone(engine.lock, std::defer_lock);
  if (engine.renders_at_once())
    shared.lock();
  else
    alone.lock();
  if (cameras.empty()) return;
  const RenderCount counted(engine);
  use_threads_here(engine);
  const auto start = Clock::now();
  engine.run->render_cameras_into(state, cameras, "size", out);
  engine.last_engine_s = seconds_since(start);
  size_t values = 0;
  for (const Camera& camera : cameras) values += static_cast<size_t>(camera.height) * camera.width * 3;
  check_rendered_values(out, values);
}

}  // namespace lact::python
