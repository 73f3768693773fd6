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
  engine->run = std::make_unique<Run>(options);
  engine->run->load_model(path);
  engine->path = path;
  engine->device = device;
  return engine;
}

SceneState encode_views(Engine& engine, const std::vector<PosedImage>& views,
                        const std::function<void()>& between_layers) {
  std::lock_guard<std::mutex> hold(engine.lock);
  const auto start = std::chrono::steady_clock::now();
  // The model's observer is called between layers (observing also computes the last layer's outputs, which the
  // state does not need: about 1/(2 layers) more work).
  Model::Observer observer;
  if (between_layers) observer = [&](const std::string&, const Tensor&) { between_layers(); };
  SceneState state = engine.run->encode_views(views, "images", observer);
  engine.last_engine_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return state;
}

std::vector<Image> render_cameras(Engine& engine, const SceneState& state, const std::vector<Camera>& cameras) {
  std::lock_guard<std::mutex> hold(engine.lock);
  if (cameras.empty()) return {};
  const auto start = std::chrono::steady_clock::now();
  std::vector<Image> images = engine.run->render_cameras(state, cameras, "size");
  engine.last_engine_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < images.size(); ++i) check_rendered_image(images[i], "render camera " + std::to_string(i));
  return images;
}

}  // namespace lact::python
