#include "core/scene_state_io.h"

#include <cmath>

#include "core/error.h"
#include "core/safetensors.h"

namespace lact {

namespace {

constexpr const char* kFormat = "lact scene state v1";

std::vector<std::string> fast_weight_prefixes(const ModelConfig& config) {
  std::vector<std::string> prefixes;
  for (int layer = 0; layer < config.layers; ++layer)
    for (size_t j = 0; j < config.block.size(); ++j)
      if (config.block[j].kind == ModuleKind::FastWeightTTT)
        prefixes.push_back("blocks." + std::to_string(layer) + ".module_list." + std::to_string(j) + ".");
  return prefixes;
}

}  // namespace

void save_scene_state(const std::string& path, const SceneState& state, const ModelConfig& config, Backend& be,
                      const std::map<std::string, std::string>& extra_metadata) {
  const auto prefixes = fast_weight_prefixes(config);
  if (prefixes.size() != state.fast_weights.size())
    throw Error(path, "scene state does not match the model config");
  std::map<std::string, SafetensorsTensor> tensors;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const FastWeights& f = state.fast_weights[i];
    tensors[prefixes[i] + "w0"] = {f.w0.shape(), be.to_host(f.w0)};
    tensors[prefixes[i] + "w1"] = {f.w1.shape(), be.to_host(f.w1)};
    tensors[prefixes[i] + "w2"] = {f.w2.shape(), be.to_host(f.w2)};
  }
  std::map<std::string, std::string> metadata = extra_metadata;
  metadata["format"] = kFormat;
  metadata["config"] = config.source.dump();
  metadata["height"] = std::to_string(state.height);
  metadata["width"] = std::to_string(state.width);
  metadata["input_views"] = std::to_string(state.input_views);
  write_safetensors(path, tensors, metadata);
}

std::map<std::string, std::string> read_scene_state_metadata(const std::string& path) {
  const SafetensorsFile file(path);
  auto it = file.metadata().find("format");
  if (it == file.metadata().end() || it->second != kFormat)
    throw Error(path, "not a lact scene state (encode one with `lact encode ... -o FILE`)");
  return file.metadata();
}

LoadedSceneState load_scene_state(const std::string& path, const ModelConfig& config, Backend& be) {
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

  const auto prefixes = fast_weight_prefixes(config);
  if (file.entries().size() != 3 * prefixes.size())
    throw Error(path, "scene state holds " + std::to_string(file.entries().size()) + " tensors, the model needs " +
                          std::to_string(3 * prefixes.size()) + " (encoded with another model?)");
  for (const std::string& prefix : prefixes) {
    FastWeights f;
    for (const char* name : {"w0", "w1", "w2"}) {
      const std::string key = prefix + name;
      const SafetensorsEntry& e = file.entry(key);
      std::vector<float> values = file.read_floats(key);
      for (float v : values)
        if (!std::isfinite(v)) throw Error(path, "tensor '" + key + "' contains NaN or infinite values");
      Tensor t = be.from_host(e.shape, values.data());
      (name[1] == '0' ? f.w0 : name[1] == '1' ? f.w1 : f.w2) = t;
    }
    loaded.state.fast_weights.push_back(std::move(f));
  }
  return loaded;
}

}  // namespace lact
