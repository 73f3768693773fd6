#include "app/scene_inputs.h"

#include <filesystem>

#include "app/common.h"
#include "core/error.h"

namespace lact::app {

void add_scene_input_options(CLI::App& command, SceneInputOptions& o, bool inputs_required) {
  command.add_option("--model", o.model, "Model weights (.safetensors with the config in its metadata)");
  command.add_option("--data", o.data, "Index JSON, scene camera file (opencv_cameras.json) or scene folder");
  command.add_option("--scene", o.scene, "Scene name (the folder of its camera file) when --data holds several");
  auto* inputs = command.add_option("--inputs", o.inputs, "Input view indices, e.g. 0,1,2 or 0-3");
  if (inputs_required) inputs->required();
  command.add_option("--size", o.size, "Working size HxW (default: the views' size; must be divisible by 8)");
}

void check_view_size(int height, int width, int patch, const std::string& where) {
  if (height % patch || width % patch)
    throw Error(where, (where == "--size" ? "size " : "views are ") + std::to_string(height) + "x" +
                           std::to_string(width) + ", not divisible by the patch size " + std::to_string(patch) +
                           (where == "--size" ? "" : "; choose --size HxW"));
}

std::unique_ptr<Model> load_model_for(const std::string& path, Backend& backend) {
  if (path.empty()) throw Error("--model", "no model given");
  return std::make_unique<Model>(load_model(path, backend), backend);
}

PreparedInputs prepare_inputs(const SceneInputOptions& o, Backend& backend) {
  if (o.data.empty()) throw Error("--data", "no data given");
  PreparedInputs p;
  p.scenes = read_scenes(o.data);
  p.scene = &select_scene(p.scenes, o.scene, o.data);
  p.scene_name = p.scene->name;
  p.input_indices = parse_indices(o.inputs, static_cast<int>(p.scene->views.size()), p.scene->source, "--inputs");
  p.model = load_model_for(o.model, backend);
  auto size = parse_size(o.size);
  if (size.first == 0) size = {p.scene->views[p.input_indices[0]].camera.height, p.scene->views[p.input_indices[0]].camera.width};
  check_view_size(size.first, size.second, p.model->config().patch_size, o.size.empty() ? p.scene->source : "--size");
  p.views = load_views(*p.scene, p.input_indices, size, true);
  p.metadata["model"] = std::filesystem::absolute(o.model).lexically_normal().string();
  p.metadata["data"] = std::filesystem::absolute(o.data).lexically_normal().string();
  p.metadata["scene"] = p.scene_name;
  p.metadata["inputs"] = o.inputs;
  return p;
}

}  // namespace lact::app
