#include "core/scene_state_io.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/camera.h"
#include "core/module_kind.h"
#include "core/safetensors.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

// v2 states carry metadata_seal (below); v1 states, written before it, are read without it.
constexpr const char* kFormat = "lact scene state v2";
constexpr const char* kFormatV1 = "lact scene state v1";
constexpr const char* kSealKey = "metadata_seal";

// The format line, or an Error naming the file: another lact version's state says which it is.
void check_format(const std::string& path, const std::map<std::string, std::string>& metadata) {
  auto format = metadata.find("format");
  if (format != metadata.end() && (format->second == kFormat || format->second == kFormatV1)) return;
  if (format != metadata.end() && format->second.rfind("lact scene state", 0) == 0)
    throw Error(path,
                "metadata format '" + format->second.substr(0, 40) +
                    "' is not one this lact reads (lact scene state v1, v2): written by another version of lact?");
  throw Error(path, "not a lact scene state (encode one with `lact encode ... -o FILE`)");
}

// Metadata that says where things are (paths, and their exact bytes in *_hex) may be edited by hand when data
// moves, and model_identity has its own check (a state without one is an older state: a warning); everything else
// says what the tensors are (size, inputs, pose normalisation, config...) and is sealed.
bool is_unsealed_key(const std::string& key) {
  for (const char* k : {"model", "data", "images"})
    if (key == k || key == std::string(k) + "_hex") return true;
  return key == kSealKey || key == "model_identity";
}

// FNV-1a over key, NUL, value: 16 hex digits a field. Not a defence against forgery (anyone can recompute it),
// but an edited field (by hand or a tool) is seen and named instead of silently changing what the state means.
std::string field_seal(const std::string& key, const std::string& value) {
  uint64_t h = 0xcbf29ce484222325ull;
  const std::string bytes = key + std::string(1, '\0') + value;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

nlohmann::json metadata_seal(const std::map<std::string, std::string>& metadata) {
  nlohmann::json seal = nlohmann::json::object();
  for (const auto& [key, value] : metadata)
    if (!is_unsealed_key(key)) seal[key] = field_seal(key, value);
  return seal;
}

// A v2 state's sealed fields as lact encode wrote them: the first one edited, added or removed is named.
void check_metadata_seal(const std::string& path, const std::map<std::string, std::string>& metadata) {
  if (metadata.at("format") == kFormatV1) return;  // written before the seal
  auto recorded = metadata.find(kSealKey);
  nlohmann::json seal;
  if (recorded != metadata.end()) seal = nlohmann::json::parse(recorded->second, nullptr, false);
  if (!seal.is_object()) throw Error(path, "metadata metadata_seal is missing or corrupt: re-encode the scene");
  const nlohmann::json now = metadata_seal(metadata);
  for (const auto& [key, value] : now.items())
    if (!seal.contains(key) || seal[key] != value)
      throw Error(path, "metadata '" + key.substr(0, 60) +
                            "' is not what lact encode wrote with these tensors (edited since?): re-encode the scene");
  for (const auto& [key, value] : seal.items())
    if (!now.contains(key)) throw Error(path, "metadata '" + key.substr(0, 60) + "' was removed: re-encode the scene");
}

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

// A whole number in min..max, or an Error naming the metadata field (std::stoi took "64abc" as 64).
int metadata_count(const std::string& path, const std::map<std::string, std::string>& metadata, const char* key,
                   int min, int max) {
  auto it = metadata.find(key);
  if (it == metadata.end()) throw Error(path, std::string("metadata has no '") + key + "'");
  const std::string& text = it->second;
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(text) < min || std::stoi(text) > max)
    throw Error(path, std::string("metadata '") + key + "' is '" + text.substr(0, 40) + "', not a whole number in " +
                          std::to_string(min) + ".." + std::to_string(max));
  return std::stoi(text);
}

// The size and view count the state was encoded at: each side a multiple of the patch, as encode requires.
void read_encode_size(const std::string& path, const std::map<std::string, std::string>& metadata, int patch,
                      SceneState& state) {
  state.height = metadata_count(path, metadata, "height", 1, kMaxImageSide);
  state.width = metadata_count(path, metadata, "width", 1, kMaxImageSide);
  state.input_views = metadata_count(path, metadata, "input_views", 1, 1 << 24);
  if (state.height % patch || state.width % patch)
    throw Error(path, "metadata height x width " + std::to_string(state.height) + "x" + std::to_string(state.width) +
                          " is not divisible by the model's patch size " + std::to_string(patch));
}

// The config the state records is the one its tensors were made with: another (even one of the same shapes) is
// another model, whatever the tensor names say.
void check_state_config(const std::string& path, const std::map<std::string, std::string>& metadata,
                        const ModelWeights& model) {
  const ModelConfig& config = model.config;
  auto recorded = metadata.find("config");
  if (recorded == metadata.end()) throw Error(path, "metadata has no 'config' (the model config it was encoded with)");
  const nlohmann::json json = nlohmann::json::parse(recorded->second, nullptr, false);
  if (json.is_discarded()) throw Error(path, "metadata 'config' is not JSON");
  if (json != config.source)
    throw Error(path, "metadata 'config' is not the config of " +
                          (model.source.empty() ? std::string("the model") : model.source) +
                          ": the state was encoded with another model (or its config was edited)");
}

// The tensors each stateful module needs. A KV cache's token count comes from the file: it must be the tokens of
// the views and size the metadata states (checked by the model against its config). Fast weights do not grow.
std::vector<TensorList> expected_state_tensors(const SafetensorsFile& file, const ModelConfig& config,
                                               const SceneState& state) {
  const std::string& path = file.path();
  const int patch = config.patch_size;
  const int64_t encoded = int64_t{state.input_views} * (state.height / patch) * (state.width / patch);
  std::vector<TensorList> expected;
  size_t needed = 0;
  for (const auto& [prefix, mc] : stateful_modules(config)) {
    auto first = file.entries().find(prefix + mc->kind->state_tensors(config, *mc, 0).at(0).first);
    const int64_t tokens =
        first != file.entries().end() && first->second.shape.size() == 3 ? first->second.shape[1] : 0;
    const bool grows_with_tokens = mc->kind->state_tensors(config, *mc, 1) != mc->kind->state_tensors(config, *mc, 2);
    if (grows_with_tokens && tokens != encoded)
      throw Error(path, "tensor '" + first->first + "' holds " + std::to_string(tokens) +
                            " tokens, but metadata input_views, height and width say " + std::to_string(encoded) +
                            " (" + std::to_string(state.input_views) + " views of " + std::to_string(state.height) +
                            "x" + std::to_string(state.width) + " in " + std::to_string(patch) + "-pixel patches)");
    expected.push_back(mc->kind->state_tensors(config, *mc, tokens));
    needed += expected.back().size();
  }
  if (file.entries().size() != needed)
    throw Error(path, "scene state holds " + std::to_string(file.entries().size()) + " tensors, the model needs " +
                          std::to_string(needed) + " (encoded with another model?)");
  return expected;
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
  metadata.erase(kSealKey);
  metadata[kSealKey] = metadata_seal(metadata).dump();
  write_safetensors(path, tensors, metadata, dtype);
}

std::map<std::string, std::string> read_scene_state_metadata(const std::string& path) {
  const SafetensorsFile file(path);
  check_format(path, file.metadata());
  check_metadata_seal(path, file.metadata());
  return file.metadata();
}

LoadedSceneState load_scene_state(const std::string& path, const ModelWeights& model, Backend& be) {
  const ModelConfig& config = model.config;
  const SafetensorsFile file(path);
  check_format(path, file.metadata());
  check_metadata_seal(path, file.metadata());
  LoadedSceneState loaded;
  loaded.metadata = file.metadata();
  read_encode_size(path, loaded.metadata, config.patch_size, loaded.state);

  // A state records its variant (older states, without the key, are the baseline's) and loads only into it.
  auto variant = loaded.metadata.find("ttt_variant");
  const std::string state_variant = variant == loaded.metadata.end() ? "dot_product" : variant->second;
  if (state_variant != config.ttt_variant().key)
    throw Error(path, "scene state was encoded with TTT variant '" + state_variant.substr(0, 60) +
                          "' but the model is '" + config.ttt_variant().key + "': encode the scene with this model");

  const auto modules = stateful_modules(config);
  const std::vector<TensorList> expected = expected_state_tensors(file, config, loaded.state);
  for (size_t i = 0; i < modules.size(); ++i) {
    ModuleState module;
    for (const auto& [name, shape] : expected[i]) {
      module.tensors.push_back({name, file.load_tensor(be, modules[i].first + name, shape, "the model")});
      be.mark_constant(module.tensors.back().second);  // read-only from here on
    }
    loaded.state.modules.push_back(std::move(module));
  }
  check_model_identity(path, loaded.metadata, model);  // after the variant and shapes, whose lines say more
  check_state_config(path, loaded.metadata, model);    // the same model file, but the config edited
  return loaded;
}

}  // namespace lact
