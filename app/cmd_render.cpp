// lact render: encode input views (or open a saved scene state) and render target views to images.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/common.h"
#include "app/scene_inputs.h"
#include "core/error.h"
#include "core/model.h"
#include "core/scene_state_io.h"
#include "datasets/image_io.h"

namespace lact::app {

namespace fs = std::filesystem;

namespace {

struct RenderOptions {
  CommonOptions common;
  SceneInputOptions inputs;
  std::string state, targets, out = "out";
  bool save_npy = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string metadata_or(const std::map<std::string, std::string>& m, const char* key, const std::string& fallback) {
  auto it = m.find(key);
  return it == m.end() ? fallback : it->second;
}

void run_render(RenderOptions& o) {
  auto backend = make_backend(o.common);
  std::unique_ptr<Model> model;
  SceneState state;
  std::vector<Scene> scenes;
  const Scene* scene = nullptr;
  std::pair<int, int> size = parse_size(o.inputs.size);
  double encode_seconds = 0;

  if (!o.state.empty()) {
    // A saved state remembers its model and data; flags override them.
    const auto metadata = read_scene_state_metadata(o.state);
    if (o.inputs.model.empty()) o.inputs.model = metadata_or(metadata, "model", "");
    if (o.inputs.data.empty()) o.inputs.data = metadata_or(metadata, "data", "");
    if (o.inputs.scene.empty()) o.inputs.scene = metadata_or(metadata, "scene", "");
    if (o.inputs.model.empty()) throw Error(o.state, "records no model: pass --model");
    if (o.inputs.data.empty()) throw Error(o.state, "records no data: pass --data for the target cameras");
    model = load_model_for(o.inputs.model, *backend);
    LoadedSceneState loaded = load_scene_state(o.state, model->config(), *backend);
    state = std::move(loaded.state);
    scenes = read_scenes(o.inputs.data);
    scene = &select_scene(scenes, o.inputs.scene, o.inputs.data);
    if (size.first == 0) size = {state.height, state.width};
  } else {
    PreparedInputs prepared = prepare_inputs(o.inputs, *backend);
    model = std::move(prepared.model);
    scenes = std::move(prepared.scenes);
    scene = prepared.scene;
    const auto start = std::chrono::steady_clock::now();
    state = model->encode(prepared.views);
    encode_seconds = seconds_since(start);
    size = {state.height, state.width};
  }

  const std::vector<int> targets =
      parse_indices(o.targets, static_cast<int>(scene->views.size()), scene->source, "--targets");
  check_view_size(size.first, size.second, model->config().patch_size, scene->source);
  std::vector<Camera> cameras;
  for (const PosedImage& v : load_views(*scene, targets, size, false)) cameras.push_back(v.camera);

  const auto start = std::chrono::steady_clock::now();
  const std::vector<Image> images = model->render(state, cameras);
  const double render_seconds = seconds_since(start);

  const fs::path folder = fs::path(o.out) / scene->name;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(folder.string(), "cannot create output folder (" + ec.message() + ")");
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string stem = (folder / std::to_string(targets[i])).string();
    write_png(stem + ".png", images[i]);
    if (o.save_npy) write_npy(stem + ".npy", images[i]);
  }
  std::printf("%s: %zu views at %dx%d, encode %.3f s, render %.1f ms/view -> %s\n", scene->name.c_str(),
              images.size(), size.first, size.second, encode_seconds, 1000.0 * render_seconds / images.size(),
              folder.string().c_str());
}

}  // namespace

void add_render_command(CLI::App& app) {
  auto options = std::make_shared<RenderOptions>();
  CLI::App* command = app.add_subcommand("render", "Render target views of a scene (encoding its input views first, "
                                                   "or from a saved --state)");
  add_scene_input_options(*command, options->inputs, false);
  command->add_option("--state", options->state, "Scene state from `lact encode` (replaces --inputs)");
  command->add_option("--targets", options->targets, "Target view indices to render, e.g. 3,4")->required();
  command->add_option("--out", options->out, "Output folder (images go to OUT/<scene>/<view>.png)")->capture_default_str();
  command->add_flag("--save-npy", options->save_npy, "Also write OUT/<scene>/<view>.npy (float32 [H, W, 3] in [0, 1])");
  add_common_options(*command, options->common);
  command->callback([options]() {
    if (options->state.empty() && options->inputs.inputs.empty())
      throw Error("render", "give --inputs (to encode) or --state (a saved scene state)");
    run_render(*options);
  });
}

}  // namespace lact::app
