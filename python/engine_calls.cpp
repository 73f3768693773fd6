#include "python/engine_calls.h"

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

SceneState encode_views(Engine& engine, const std::vector<PosedImage>& views) {
  std::lock_guard<std::mutex> hold(engine.lock);
  if (views.empty()) throw Error("images", "no input views");
  check_memory(*engine.model, static_cast<int64_t>(views.size()), views[0].image.height, views[0].image.width,
               "images");
  return engine.model->encode(views);
}

std::vector<Image> render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras) {
  std::lock_guard<std::mutex> hold(engine.lock);
  if (cameras.empty()) return {};
  check_memory(*engine.model, 1, cameras[0].height, cameras[0].width, "size");
  std::vector<Image> images = engine.model->render(state, cameras);
  for (size_t i = 0; i < images.size(); ++i) check_rendered_image(images[i], "render camera " + std::to_string(i));
  return images;
}

}  // namespace lact::python
