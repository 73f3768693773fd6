// The "model + data + input views" part that encode and render share.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/model.h"
#include "datasets/scene.h"

namespace lact::app {

struct SceneInputOptions {
  std::string model, data, scene, inputs, size;
};
void add_scene_input_options(CLI::App& command, SceneInputOptions& options, bool inputs_required = true);

struct PreparedInputs {
  std::unique_ptr<Model> model;
  std::vector<Scene> scenes;
  const Scene* scene = nullptr;
  std::string scene_name;
  std::vector<int> input_indices;
  std::vector<PosedImage> views;                 // loaded input views at the working size
  std::map<std::string, std::string> metadata;   // what a scene state records about its origin
};

// Loads the model, reads the data, selects the scene and loads the input views. Every failure is an Error
// naming the file.
PreparedInputs prepare_inputs(const SceneInputOptions& options, Backend& backend);

// Loads the model and checks that views of `height` x `width` fit its patch size (error names `where`).
std::unique_ptr<Model> load_model_for(const std::string& path, Backend& backend);
void check_view_size(int height, int width, int patch, const std::string& where);

}  // namespace lact::app
