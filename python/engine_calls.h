// The one place the Python module calls the engine: a model opened, encoded from and rendered through the
// pipeline's run object (pipeline/run.h, one process), as the commands and the viewer do. The module's other
// files only convert arrays and errors.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/pixel_view.h"
#include "kernels/backend.h"
#include "pipeline/run.h"

namespace lact::python {

// A model with its backend (the model refers to it) and the lock its engine calls take. Renders read the model
// and their state only, each with its own scratch tensors: on the CPU any number run at once (shared lock); on
// CUDA (one stream, recorded graphs) they take turns. Encode, load and save take turns with everything.
struct Engine {
  std::unique_ptr<Run> run;  // the backend, the model and the memory checks
  std::string path;
  std::string device;
  std::string precision;
  int threads = 0;  // CPU threads of each call (0: the library default), set on the calling thread
  std::shared_mutex lock;
  std::atomic<double> last_engine_s{0};  // seconds the last encode or render spent in the engine (the benchmark's)
  std::atomic<int> renders_running{0}, most_renders_running{0};  // renders at once, now and at most (a test's)
  // The layers its batch had done when a render last checked for a stop, or all of them when a batch finished
  // (a test's)
  std::atomic<int> render_layers_done{0};
  // (the fork generation of the process it was last entered in << 32) | the engine calls begun and not ended
  std::atomic<uint64_t> calls_inside{0};

  const Model& model() const { return run->model(); }
  Backend& backend() { return run->backend(); }
  bool renders_at_once() const { return device == "cpu"; }
};

// One call into an engine for as long as it lives: the engine's lock held (`alone`: with no other call; else
// beside other renders where the backend allows). Two calls that would wait forever for the lock are a lact.Error
// instead: a call from inside another call of the same engine on this thread (a signal handler run between
// encode's layers), and, in a fork()ed child, any call of a model another thread was inside when the process
// forked (the child's copy of the lock is held by a thread the child does not have).
class EngineCall {
 public:
  EngineCall(Engine& engine, bool alone);
  ~EngineCall();
  EngineCall(const EngineCall&) = delete;
  EngineCall& operator=(const EngineCall&) = delete;

 private:
  Engine& engine_;
  const Engine* outer_;  // the engine this thread was already inside, if any
  std::shared_lock<std::shared_mutex> shared_;
  std::unique_lock<std::shared_mutex> alone_;
};

std::shared_ptr<Engine> open_engine(const std::string& path, const std::string& device, const std::string& precision,
                                    int threads);

// Checks the memory the views need first (as the CLI does), then encodes the caller's pixels (read in place when
// packed); `between_layers` is called after the input layer and after each layer (it may throw to stop there).
SceneState encode_views(Engine& engine, const std::vector<Camera>& cameras, const PixelView& pixels,
                        const std::function<void()>& between_layers = {});
// Renders every camera in one call (the CLI's batching, so the same numbers) into `out`, the images one after
// another; a non-finite value is an Error. `between_steps` is called after each batch but the last and before
// each layer of every batch run layer by layer (Model::RenderLayerCheck: the CPU's, a GPU's without graphs); it
// may throw to stop there: the images of the batches done are written, the rest of `out` untouched.
void render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras, float* out,
                    const std::function<void()>& between_steps = {});

}  // namespace lact::python
