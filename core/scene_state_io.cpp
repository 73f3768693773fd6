#include "core/scene_state_io.h"

#include <cmath>

#include "core/error.h"
#include "core/safetensors.h"

namespace lact {

namespace {

constexpr const char* kFormat = "lact scene state v1";

// The official key prefix of every module of `kind`, layer-major.
std::vector<std::string> module_prefixes(const ModelConfig& config, ModuleKind kind) {
  std::vector<std::string> prefixes;
  for (int layer = 0; layer < config.layers; ++layer)
    for (size_t j = 0; j < config.block.size(); ++j)
      if (config.block[j].kind == kind)
        prefixes.push_back("blocks." + std::to_string(layer) + ".module_list." + std::to_string(j) + ".");
  return prefixes;
}

}  // namespace

void save_scene_state(const std::string& path, const SceneState& state, const ModelConfig& config, Backend& be,
                      const std::map<std::string, std::string>& extra_metadata) {
  const auto prefixes = module_prefixes(config, ModuleKind::FastWeightTTT);
  const auto cache_prefixes = module_prefixes(config, ModuleKind::GlobalAttention);
  if (prefixes.size() != state.fast_weights.size() || cache_prefixes.size() != state.kv_caches.size())
    throw Error(path, "scene state does not match the model config");
  std::map<std::string, SafetensorsTensor> tensors;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const FastWeights& f = state.fast_weights[i];
    tensors[prefixes[i] + "w0"] = {f.w0.shape(), be.to_host(f.w0)};
    tensors[prefixes[i] + "w1"] = {f.w1.shape(), be.to_host(f.w1)};
    tensors[prefixes[i] + "w2"] = {f.w2.shape(), be.to_host(f.w2)};
  }
  for (size_t i = 0; i < cache_prefixes.size(); ++i) {
    const KvCache& kv = state.kv_caches[i];
    tensors[cache_prefixes[i] + "k_cache"] = {kv.k.shape(), be.to_host(kv.k)};
    tensors[cache_prefixes[i] + "v_cache"] = {kv.v.shape(), be.to_host(kv.v)};
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

  const auto prefixes = module_prefixes(config, ModuleKind::FastWeightTTT);
  const auto cache_prefixes = module_prefixes(config, ModuleKind::GlobalAttention);
  const size_t needed = 3 * prefixes.size() + 2 * cache_prefixes.size();
  if (file.entries().size() != needed)
    throw Error(path, "scene state holds " + std::to_string(file.entries().size()) + " tensors, the model needs " +
                          std::to_string(needed) + " (encoded with another model?)");
  auto read = [&](const std::string& key) {
    const SafetensorsEntry& e = file.entry(key);
    std::vector<float> values = file.read_floats(key);
    for (float v : values)
      if (!std::isfinite(v)) throw Error(path, "tensor '" + key + "' contains NaN or infinite values");
    return be.from_host(e.shape, values.data());
  };
  for (const std::string& prefix : prefixes)
    loaded.state.fast_weights.push_back({read(prefix + "w0"), read(prefix + "w1"), read(prefix + "w2")});
  for (const std::string& prefix : cache_prefixes)
    loaded.state.kv_caches.push_back({read(prefix + "k_cache"), read(prefix + "v_cache")});
  return loaded;
}

}  // namespace lact
