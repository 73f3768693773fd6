#include "python/engine_calls.h"

#include <omp.h>
#include <pthread.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "pipeline/backend_options.h"
#include "pipeline/memory_check.h"
#include "pipeline/scene_selection.h"
#include "system/clock.h"
#include "system/error.h"
#include "system/host_memory.h"

namespace lact::python {

namespace {

using Clock = std::chrono::steady_clock;

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

// GNU OpenMP's thread pool does not survive fork(): a thread that ran a parallel region keeps a pool whose
// threads the child does not have, and the child's next parallel region on that thread waits for them forever
// (a render in a multiprocessing worker never returned). In the child the forking thread therefore runs on one
// thread from then on, whatever calls it makes (read_scene, ssim and the model's calls alike); threads the child
// starts get pools of their own and keep the model's count.
thread_local bool pool_lost_here = false;
// Forks between the first process and this one: a model's calls counted under another generation were begun by
// threads of an ancestor process.
std::atomic<uint64_t> fork_generation{0};

void after_fork_in_child() {
  pool_lost_here = true;
  omp_set_num_threads(1);
  threads_set_here = 1;
  ++fork_generation;
}

// The engine this thread is inside (EngineCall): its lock is this thread's, and taking it again never returns.
thread_local const Engine* engine_inside_here = nullptr;

constexpr uint64_t kCallsMask = 0xffffffffu;

// Counts a call into `engine`, unless this process was forked while threads it lacks were inside it.
void count_call(Engine& engine) {
  const uint64_t generation = fork_generation.load();
  uint64_t seen = engine.calls_inside.load();
  for (;;) {
    uint64_t next = seen + 1;
    if ((seen >> 32) != generation) {
      if (seen & kCallsMask)
        throw Error("lact.Model",
                    "another thread was inside this model when the process forked, and this process's copy of "
                    "the model's lock is held for good: open the model again here (lact.Model(path))");
      next = (generation << 32) | 1;  // the ancestors' calls had all ended: the model is whole here
    }
    if (engine.calls_inside.compare_exchange_weak(seen, next)) return;
  }
}

[[maybe_unused]] const int fork_handler_registered = pthread_atfork(nullptr, nullptr, after_fork_in_child);

// render_cameras' `between_steps` on the thread rendering (the model's progress callback and layer check are
// shared by every thread that renders at once; each thread calls its own).
thread_local const std::function<void()>* between_steps_here = nullptr;

void report_render_batch(const char* stage, int done, int total) {
  if (between_steps_here && *between_steps_here && done > 0 && done < total && std::strcmp(stage, "render views") == 0)
    (*between_steps_here)();
}

// Sets between_steps_here for as long as it lives.
class BetweenSteps {
 public:
  explicit BetweenSteps(const std::function<void()>& call) : outer_(between_steps_here) { between_steps_here = &call; }
  ~BetweenSteps() { between_steps_here = outer_; }
  BetweenSteps(const BetweenSteps&) = delete;
  BetweenSteps& operator=(const BetweenSteps&) = delete;

 private:
  const std::function<void()>* outer_;
};

void use_threads_here(Engine& engine) {
  const int threads = pool_lost_here ? 1 : engine.threads;
  if (threads <= 0 || threads_set_here == threads) return;
  engine.backend().set_threads(threads);
  threads_set_here = threads;
}

// The memory check of a render call (pipeline/memory_check.h: its batch, all its images kept together) refuses with
// its facts, worded here for a call of `cameras` at size=(H, W): the CLI's batch and --size are not this module's
// words. With several cameras, fewer a call also fits (the size suggested is for this many).
std::string render_memory_words(const RenderMemoryShortfall& f, size_t cameras) {
  const std::string views = f.views == 1 ? "one view" : std::to_string(f.views) + " views";
  const std::string fitting = f.fitting_height > 0 ? "size=(" + std::to_string(f.fitting_height) + ", " +
                                                         std::to_string(f.fitting_width) + ") fits"
                                                   : "no size fits";
  return "size " + std::to_string(f.height) + "x" + std::to_string(f.width) + ": rendering " + views + " of " +
         std::to_string(f.tokens) + " tokens needs about " + memory_size_text(f.bytes_needed) + " but " + f.limit +
         " has " + memory_size_text(f.bytes_available) +
         " available: the render size is too large for this memory: render at a smaller size=(H, W), with the "
         "intrinsics scaled to it (" +
         fitting + ")" +
         (cameras > 1 ? ", or fewer cameras a call (this one renders " + std::to_string(cameras) + ")" : "");
}

}  // namespace

EngineCall::EngineCall(Engine& engine, bool alone)
    : engine_(engine),
      outer_(engine_inside_here),
      shared_(engine.lock, std::defer_lock),
      alone_(engine.lock, std::defer_lock) {
  if (outer_ == &engine)
    throw Error("lact.Model",
                "called from inside another call of the same model on this thread (a signal handler run between "
                "encode's layers): call it once that call has returned");
  count_call(engine);
  engine_inside_here = &engine;
  try {
    if (alone || !engine.renders_at_once())
      alone_.lock();
    else
      shared_.lock();
  } catch (...) {  // EDEADLK (std::system_error): this thread holds the lock through another engine's call
    engine_inside_here = outer_;
    --engine.calls_inside;
    throw;
  }
}

EngineCall::~EngineCall() {
  engine_inside_here = outer_;
  --engine_.calls_inside;  // the generation in the high bits stays
}

std::shared_ptr<Engine> open_engine(const std::string& path, const std::string& device, const std::string& precision,
                                    int threads) {
  auto engine = std::make_shared<Engine>();
  CommonOptions options;
  options.backend = device;
  options.precision = precision;
  options.device_named = "device='" + device + "'";  // Python's words, not the CLI's --device
  options.threads = threads;
  engine->path = path;
  engine->device = device;
  engine->precision = precision;
  engine->threads = threads;
  engine->run = std::make_unique<Run>(options);
  threads_set_here = -1;      // the backend set its count on this thread
  use_threads_here(*engine);  // one thread again where fork() took this thread's pool
  engine->run->load_model(path);
  Engine* counted = engine.get();  // the engine owns the run and its model: it outlives their calls
  engine->run->set_model_progress([counted](const char* stage, int done, int total) {
    if (done > 0 && std::strcmp(stage, "render views") == 0)
      counted->render_layers_done = counted->model().config().layers;  // a batch finished: every layer done
    report_render_batch(stage, done, total);
  });
  engine->run->set_model_render_layer_check([counted](int layers_done, int) {
    counted->render_layers_done = layers_done;
    if (between_steps_here && *between_steps_here) (*between_steps_here)();
  });
  return engine;
}

SceneState encode_views(Engine& engine, const std::vector<Camera>& cameras, const PixelView& pixels,
                        const std::function<void()>& between_layers) {
  const EngineCall call(engine, true);
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

void render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras, float* out,
                    const std::function<void()>& between_steps) {
  const EngineCall call(engine, false);
  if (cameras.empty()) return;
  const RenderCount counted(engine);
  const BetweenSteps checked(between_steps);
  use_threads_here(engine);
  const auto start = Clock::now();
  try {
    engine.run->render_cameras_into(state, cameras, "size", out);
  } catch (const RenderMemoryError& e) {
    throw RenderMemoryError(e.facts(), render_memory_words(e.facts(), cameras.size()));
  }
  engine.last_engine_s = seconds_since(start);
  size_t values = 0;
  for (const Camera& camera : cameras) values += static_cast<size_t>(camera.height) * camera.width * 3;
  check_rendered_values(out, values);
}

}  // namespace lact::python
