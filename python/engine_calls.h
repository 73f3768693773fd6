// The one place the Python module calls the engine: a model opened, encoded from and rendered through the
// pipeline's run object (pipeline/run.h, one process), as the commands and the viewer do. The module's other
// files only convert arrays and errors.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/model.h"
#include "kernels/backend.h"
#include "pipeline/run.h"

namespace lact::python {

// A model with its backend (the model refers to it) and the lock that serialises engine calls on it: two Python
// threads may call render at once; the backend's scratch memory is one per model, so their calls take turns with
// the GIL released (other Python code keeps running).
struct Engine {
  std::unique_ptr<Run> run;  // the backend, the model and the memory checks
  std::string path;
  std::string device;
  std::mutex lock;
  double last_engine_s = 0;  // seconds the last encode or render spent in the engine (the overhead benchmark's)

  const Model& model() const { return run->model(); }
  Backend& backend() { return run->backend(); }
};

std::shared_ptr<Engine> open_engine(const std::string& path, const std::string& device, const std::string& precision,
                                    int threads);

// Checks the memory the views need first (as the CLI does), then encodes; `between_layers` is called after the
// input layer and after each layer (it may throw to stop the encode there).
SceneState encode_views(Engine& engine, const std::vector<PosedImage>& views,
                        const std::function<void()>& between_layers = {});
// Renders every camera in one call (the CLI's batching, so the same numbers); a non-finite image is an Error.
std::vector<Image> render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras);

}  // namespace lact::python
