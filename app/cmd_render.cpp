// lact render: encode input views (or open a saved scene state) and render target views to images.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/common.h"
#include "app/scene_inputs.h"
#include "core/error.h"
#include "core/scene_state_io.h"
#include "datasets/image_io.h"
#include "datasets/view_selection.h"

namespace lact::app {

namespace fs = std::filesystem;

namespace {

struct RenderOptions {
  CommonOptions common;
  DataOptions data;
  std::string model, state, targets, out = "out";
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
  SceneSelection selection;
  double encode_seconds = 0;

  if (!o.state.empty()) {
    // A saved state remembers its model, data and preprocessing; flags override the model and data.
    const auto metadata = read_scene_state_metadata(o.state);
    if (o.model.empty()) o.model = metadata_or(metadata, "model", "");
    if (o.data.data.empty()) o.data.data = metadata_or(metadata, "data", "");
    if (o.data.scene.empty()) o.data.scene = metadata_or(metadata, "scene", "");
    if (o.model.empty()) throw Error(o.state, "records no model: pass --model");
    if (o.data.data.empty()) throw Error(o.state, "records no data: pass --data for the target cameras");
    o.data.background = metadata_or(metadata, "background", o.data.background);
    o.data.downscale = std::stoi(metadata_or(metadata, "downscale", "1"));
    o.data.normalize_poses = "none";  // the state's own transform applies (below)
    o.data.inputs.clear();
    model = load_model_for(o.model, *backend);
    LoadedSceneState loaded = load_scene_state(o.state, model->config(), *backend);
    state = std::move(loaded.state);
    if (o.data.size.empty()) o.data.size = std::to_string(state.height) + "x" + std::to_string(state.width);
    selection = select_scene_views(o.data, model->config().patch_size);
    selection.pose = pose_from_metadata(metadata, o.state);
  } else {
    if (o.data.inputs.empty()) throw Error("render", "give --inputs (to encode) or --state (a saved scene state)");
    model = load_model_for(o.model, *backend);
    selection = select_scene_views(o.data, model->config().patch_size);
    const std::vector<PosedImage> inputs = selected_views(selection, selection.inputs, true);
    const auto start = std::chrono::steady_clock::now();
    state = model->encode(inputs);
    encode_seconds = seconds_since(start);
  }

  const Scene& scene = *selection.scene;
  const std::vector<int> targets = select_views(o.targets, scene, true, selection.inputs, o.data.seed, "--targets");
  std::vector<Camera> cameras;
  for (const PosedImage& v : selected_views(selection, targets, false)) cameras.push_back(v.camera);

  const auto start = std::chrono::steady_clock::now();
  const std::vector<Image> images = model->render(state, cameras);
  const double render_seconds = seconds_since(start);

  const fs::path folder = fs::path(o.out) / scene.name;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(folder.string(), "cannot create output folder (" + ec.message() + ")");
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string stem = (folder / std::to_string(targets[i])).string();
    write_png(stem + ".png", images[i]);
    if (o.save_npy) write_npy(stem + ".npy", images[i]);
  }
  std::printf("%s: %zu views at %dx%d, encode %.3f s, render %.1f ms/view -> %s\n", scene.name.c_str(),
              images.size(), selection.height, selection.width, encode_seconds,
              1000.0 * render_seconds / images.size(), folder.string().c_str());
}

}  // namespace

void add_render_command(CLI::App& app) {
  auto o = std::make_shared<RenderOptions>();
  CLI::App* command = app.add_subcommand("render", "Render target views of a scene (encoding its input views first, "
                                                   "or from a saved --state)");
  command->add_option("--model", o->model, "Model weights (.safetensors with the config in its metadata)");
  add_data_options(*command, o->data);
  command->add_option("--state", o->state, "Scene state from `lact encode` (replaces --inputs)");
  command->add_option("--targets", o->targets, "Target views: 3,4 | 8-15 | uniform:N | fold8 | rest | all")->required();
  command->add_option("--out", o->out, "Output folder (images go to OUT/<scene>/<view>.png)")->capture_default_str();
  command->add_flag("--save-npy", o->save_npy, "Also write OUT/<scene>/<view>.npy (float32 [H, W, 3] in [0, 1])");
  add_common_options(*command, o->common);
  command->callback([o]() { run_render(*o); });
}

}  // namespace lact::app
