// The one place the Python module calls the engine: a model opened, encoded from and rendered through the
// pipeline's run object (pipeline/run.h, one process), as the commands and the viewer do. The module's other
// files only convert arrays and errors.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
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
  int threads = 0;  // CPU threads of each call (0: the library default), set on the calling thread
  std::shared_mutex lock;
  std::atomic<double> last_engine_s{0};  // seconds the last encode or render spent in the engine (the benchmark's)
  std::atomic<int> renders_running{0}, most_renders_running{0};  // renders at once, now and at most (a test's)

  const Model& model() const { return run->model(); }
  Backend& backend() { return run->backend(); }
  bool renders_at_once() const { return device == "cpu"; }
};

std::shared_ptr<Engine> open_engine(const std::string& path, const std::string& device, const std::string& precision,
                                    int threads);

// Checks the memory the views need first (as the CLI does), then encodes the caller's pixels (read in place when
// packed); `between_layers` is called after the input layer and after each layer (it may throw to stop there).
SceneState encode_views(Engine& engine, const std::vector<Camera>& cameras, const PixelView& pixels,
                        const std::function<void()>& between_layers = {});
// Renders every camera in one call (the CLI's batching, so the same numbers) into `out`, the images one after
// another; a non-finite value is an Error.
void render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras, float* out);

}  // namespace lact::python
