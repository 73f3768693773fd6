#include "core/scene_state_io.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/module_kind.h"
#include "core/safetensors.h"
#include "core/terminal_text.h"

namespace lact {

namespace {

constexpr const char* kFormat = "lact scene state v1";

// The official key prefix of every stateful module, layer-major (the order of SceneState::modules), with
// its config.
std::vector<std::pair<std::string, const ModuleConfig*>> stateful_modules(const ModelConfig& config) {
  std::vector<std::pair<std::string, const ModuleConfig*>> modules;
  for (int layer = 0; layer < config.layers; ++layer)
    for (size_t j = 0; j < config.block.size(); ++j)
      if (config.block[j].kind->stateful())
        modules.push_back(
            {"blocks." + std::to_string(layer) + ".module_list." + std::to_string(j) + ".", &config.block[j]});
  return modules;
}

// A state loads only with the model file it was encoded with: the same shapes are not enough (another training
// run, a re-export), since its fast weights mean something only next to the slow weights that made them.
void check_model_identity(const std::string& path, const std::map<std::string, std::string>& metadata,
                          const ModelWeights& model) {
  if (model.identity.empty()) return;  // a model built in memory (tests, bench): nothing to compare
  auto recorded = metadata.find("model_identity");
  auto recorded_path = metadata.find("model");
  const std::string encoded_with =
      recorded_path == metadata.end() ? "another model" : recorded_path->second.substr(0, 200);
  if (recorded == metadata.end()) {
    std::fprintf(stderr,
                 "lact: warning: %s records no model identity (written by an older lact): cannot check that "
                 "%s is the model it was encoded with\n",
                 terminal_text(path).c_str(), terminal_text(model.source).c_str());
    return;
  }
  if (recorded->second == model.identity) return;
  throw Error(path, "was encoded with " + encoded_with + " (identity " + recorded->second.substr(0, 60) + "), not " +
                        model.source + " (identity " + model.identity + "): encode the scene with this model");
}

}  // namespace

void save_scene_state(const std::string& path, const SceneState& state, const ModelWeights& model, Backend& be,
                      const std::map<std::string, std::string>& extra_metadata, StoredDtype dtype) {
  const ModelConfig& config = model.config;
  const auto modules = stateful_modules(config);
  if (modules.size() != state.modules.size()) throw Error(path, "scene state does not match the model config");
  std::map<std::string, SafetensorsTensor> tensors;
  for (size_t i = 0; i < modules.size(); ++i)
    for (const auto& [name, tensor] : state.modules[i].tensors)
      tensors[modules[i].first + name] = {tensor.shape(), be.to_host(tensor)};
  std::map<std::string, std::string> metadata = extra_metadata;
  metadata["format"] = kFormat;
  metadata["config"] = config.source.dump();
  metadata["ttt_variant"] = config.ttt_variant().key;
  metadata["height"] = std::to_string(state.height);
  metadata["width"] = std::to_string(state.width);
  metadata["input_views"] = std::to_string(state.input_views);
  if (!model.identity.empty()) metadata["model_identity"] = model.identity;
  write_safetensors(path, tensors, metadata, dtype);
}

std::map<std::string, std::string> read_scene_state_metadata(const std::string& path) {
  const SafetensorsFile file(path);
  auto it = file.metadata().find("format");
  if (it == file.metadata().end() || it->second != kFormat)
    throw Error(path, "not a lact scene state (encode one with `lact encode ... -o FILE`)");
  return file.metadata();
}

LoadedSceneState load_scene_state(const std::string& path, const ModelWeights& model, Backend& be) {
  const ModelConfig& config = model.config;
  const SafetensorsFile file(path);
  auto format = file.metadata().find("format");
  if (format == file.metadata().end() || format->second != kFormat)
    throw Error(path, "not a lact scene state (encode one with `lact encode ... -o FILE`)");
  LoadedSceneState loaded;
  loaded.metadata = file.metadata();
  auto number = [&](const char* key) {
    auto it = loaded.metadata.find(key);
    try {
      return it == loaded.metadata.end() ? 0 : std::stoi(it->second);
    } catch (const std::exception&) {
      throw Error(path, std::string("metadata '") + key + "' is not a number");
    }
  };
  loaded.state.height = number("height");
  loaded.state.width = number("width");
  loaded.state.input_views = number("input_views");

  // A state records its variant (older states, without the key, are the baseline's) and loads only into it.
  auto variant = loaded.metadata.find("ttt_variant");
  const std::string state_variant = variant == loaded.metadata.end() ? "dot_product" : variant->second;
  if (state_variant != config.ttt_variant().key)
    throw Error(path, "scene state was encoded with TTT variant '" + state_variant.substr(0, 60) +
                          "' but the model is '" + config.ttt_variant().key + "': encode the scene with this model");

  const auto modules = stateful_modules(config);
  std::vector<TensorList> expected;
  size_t needed = 0;
  for (const auto& [prefix, mc] : modules) {
    // A KV cache's token count comes from the file (checked by the model against its config).
    auto first = file.entries().find(prefix + mc->kind->state_tensors(config, *mc, 0).at(0).first);
    const int64_t tokens =
        first != file.entries().end() && first->second.shape.size() == 3 ? first->second.shape[1] : 0;
    expected.push_back(mc->kind->state_tensors(config, *mc, tokens));
    needed += expected.back().size();
  }
  if (file.entries().size() != needed)
    throw Error(path, "scene state holds " + std::to_string(file.entries().size()) + " tensors, the model needs " +
                          std::to_string(needed) + " (encoded with another model?)");
  for (size_t i = 0; i < modules.size(); ++i) {
    ModuleState module;
    for (const auto& [name, shape] : expected[i]) {
      module.tensors.push_back({name, file.load_tensor(be, modules[i].first + name, shape, "the model")});
      be.mark_constant(module.tensors.back().second);  // read-only from here on
    }
    loaded.state.modules.push_back(std::move(module));
  }
  check_model_identity(path, loaded.metadata, model);  // after the variant and shapes, whose lines say more
  return loaded;
}

}  // namespace lact
