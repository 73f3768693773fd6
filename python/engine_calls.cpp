#include "python/engine_calls.h"

#include <chrono>

#include "core/error.h"
#include "pipeline/backend_options.h"
#include "pipeline/scene_selection.h"

namespace lact::python {

std::shared_ptr<Engine> open_engine(const std::string& path, const std::string& device, const std::string& precision,
                                    int threads) {
  auto engine = std::make_shared<Engine>();
  CommonOptions options;
  options.backend = device;
  options.precision = precision;
  options.threads = threads;
  engine->backend = make_backend(options);
  engine->model = load_model_for(path, *engine->backend);
  engine->path = path;
  engine->device = device;
  return engine;
}

SceneState encode_views(Engine& engine, const std::vector<PosedImage>& views,
                        const std::function<void()>& between_layers) {
  std::lock_guard<std::mutex> hold(engine.lock);
  if (views.empty()) throw Error("images", "no input views");
  check_memory(*engine.model, static_cast<int64_t>(views.size()), views[0].image.height, views[0].image.width,
               "images");
  const auto start = std::chrono::steady_clock::now();
  // The model's observer is called between layers (observing also computes the last layer's outputs, which the
  // state does not need: about 1/(2 layers) more work).
  Model::Observer observer;
  if (between_layers) observer = [&](const std::string&, const Tensor&) { between_layers(); };
  SceneState state = engine.model->encode(views, observer);
  engine.last_engine_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return state;
}

std::vector<Image> render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras) {
  std::lock_guard<std::mutex> hold(engine.lock);
  if (cameras.empty()) return {};
  check_memory(*engine.model, 1, cameras[0].height, cameras[0].width, "size");
  const auto start = std::chrono::steady_clock::now();
  std::vector<Image> images = engine.model->render(state, cameras);
  engine.last_engine_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < images.size(); ++i) check_rendered_image(images[i], "render camera " + std::to_string(i));
  return images;
}

}  // namespace lact::python
