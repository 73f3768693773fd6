#include "core/config.h"

#include <cstdint>
#include <type_traits>

#include "core/error.h"
#include "core/json_text.h"
#include "core/safetensors.h"

namespace lact {

int ModuleConfig::hidden(int dim) const {
  if (kind == ModuleKind::FastWeightTTT) return static_cast<int>(head_dim * inter_multi);
  return static_cast<int>(dim * inter_multi);
}

int ModelConfig::ttt_modules_per_block() const {
  int n = 0;
  for (const ModuleConfig& m : block) n += m.kind == ModuleKind::FastWeightTTT;
  return n;
}

int ModelConfig::global_attention_modules_per_block() const {
  int n = 0;
  for (const ModuleConfig& m : block) n += m.kind == ModuleKind::GlobalAttention;
  return n;
}

long long ModelConfig::fast_weight_floats_per_layer() const {
  long long total = 0;
  for (const ModuleConfig& m : block)
    if (m.kind == ModuleKind::FastWeightTTT) total += 3LL * m.heads(dim) * m.head_dim * m.hidden(dim);
  return total;
}

namespace {

template <typename T>
T field(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) throw Error(where, std::string("config has no field '") + key + "'");
  const nlohmann::json& value = object.at(key);
  // Integers must be integers in range: nlohmann would truncate 8.5 to 8 and wrap 2^32 + 2 to 2.
  if constexpr (std::is_same_v<T, int>) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() ? value.get<uint64_t>() > uint64_t(INT32_MAX)
                                    : value.get<int64_t>() < INT32_MIN || value.get<int64_t>() > INT32_MAX))
      throw Error(where, std::string("config field '") + key + "' is not an integer in the int range");
  }
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(where, std::string("config field '") + key + "' has the wrong type");
  }
}

template <typename T>
T optional_field(const nlohmann::json& object, const char* key, T fallback, const std::string& where) {
  return object.contains(key) ? field<T>(object, key, where) : fallback;
}

ModuleConfig parse_module(const nlohmann::json& entry, int dim, const std::string& where) {
  ModuleConfig m;
  m.type = field<std::string>(entry, "type", where);
  m.length_dim = optional_field<std::string>(entry, "length_dim", "vl", where);
  const nlohmann::json params = entry.contains("params") ? entry.at("params") : nlohmann::json::object();
  const std::string class_name = m.type.substr(m.type.rfind('.') + 1);
  if (class_name == "SelfAttention") {
    m.kind = ModuleKind::WindowAttention;
    m.head_dim = field<int>(params, "head_dim", where);
    m.use_qk_norm = optional_field<bool>(params, "use_qk_norm", true, where);
    if (optional_field<bool>(params, "causal", false, where))
      throw Error(where, "causal SelfAttention is not supported (LaCT NVS uses bidirectional attention)");
    if (m.length_dim != "l")
      throw Error(where, "SelfAttention over the whole sequence (length_dim '" + m.length_dim +
                             "') is not supported yet: only per-view window attention (length_dim 'l')");
  } else if (class_name == "GlobalAttention") {
    m.kind = ModuleKind::GlobalAttention;
    m.head_dim = field<int>(params, "head_dim", where);
    m.use_qk_norm = optional_field<bool>(params, "use_qk_norm", true, where);
  } else if (class_name == "FastWeightGluMLPMultihead") {
    m.kind = ModuleKind::FastWeightTTT;
    m.head_dim = field<int>(params, "head_dim", where);
    m.inter_multi = optional_field<double>(params, "inter_multi", 1.0, where);
    m.base_lr = optional_field<double>(params, "base_lr", 0.01, where);
    m.muon_update_steps = optional_field<int>(params, "muon_update_steps", 0, where);
    if (m.base_lr <= 0) throw Error(where, "TTT base_lr must be positive");
    if (m.muon_update_steps < 0 || m.muon_update_steps > ConfigLimits::kMaxNewtonSchulzSteps)
      throw Error(where, "muon_update_steps " + std::to_string(m.muon_update_steps) + " is outside [0, " +
                             std::to_string(ConfigLimits::kMaxNewtonSchulzSteps) + "]");
    if (m.length_dim != "vl")
      throw Error(where, "a TTT layer per view (length_dim '" + m.length_dim + "') is not supported: only 'vl'");
  } else if (class_name == "MLP") {
    m.kind = ModuleKind::Mlp;
    m.inter_multi = optional_field<double>(params, "inter_multi", 4.0, where);
  } else {
    throw Error(where, "unknown block module type '" + m.type + "'");
  }
  if (optional_field<bool>(params, "bias", false, where)) throw Error(where, "biased Linear layers are not supported");
  if (m.kind != ModuleKind::Mlp && (m.head_dim <= 0 || dim % m.head_dim != 0))
    throw Error(where, "head_dim " + std::to_string(m.head_dim) + " does not divide dim " + std::to_string(dim));
  if (!(m.inter_multi > 0 && m.inter_multi <= ConfigLimits::kMaxInterMulti) || m.hidden(dim) <= 0)
    throw Error(where, "inter_multi must be in (0, " + std::to_string(int(ConfigLimits::kMaxInterMulti)) +
                           "] and give a positive hidden width");
  if (!(m.base_lr < 1e6)) throw Error(where, "TTT base_lr is not a finite number below 1e6");
  return m;
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) throw Error(where, "model config is not a JSON object");
  // A full training config nests the model under "model"; accept both.
  const nlohmann::json& body = json.contains("block_config") || !json.contains("model") ? json : json.at("model");
  ModelConfig c;
  c.source = body;
  c.patch_size = field<int>(body, "patch_size", where);
  c.dim = field<int>(body, "dim", where);
  c.layers = field<int>(body, "layers", where);
  if (c.patch_size <= 0 || c.dim <= 0 || c.layers <= 0)
    throw Error(where, "patch_size, dim and layers must be positive");
  if (c.patch_size > ConfigLimits::kMaxPatch || c.dim > ConfigLimits::kMaxDim || c.layers > ConfigLimits::kMaxLayers)
    throw Error(where, "config out of range: patch_size " + std::to_string(c.patch_size) + " (at most " +
                           std::to_string(ConfigLimits::kMaxPatch) + "), dim " + std::to_string(c.dim) + " (at most " +
                           std::to_string(ConfigLimits::kMaxDim) + "), layers " + std::to_string(c.layers) +
                           " (at most " + std::to_string(ConfigLimits::kMaxLayers) + ")");
  const nlohmann::json blocks = field<nlohmann::json>(body, "block_config", where);
  if (!blocks.is_array() || blocks.empty()) throw Error(where, "block_config must be a non-empty list");
  if (blocks.size() > ConfigLimits::kMaxModulesPerBlock)
    throw Error(where, "block_config lists " + std::to_string(blocks.size()) + " modules (at most " +
                           std::to_string(ConfigLimits::kMaxModulesPerBlock) + ")");
  for (const nlohmann::json& entry : blocks) c.block.push_back(parse_module(entry, c.dim, where));
  return c;
}

ModelConfig builtin_model_config(const std::string& name) {
  int layers = 0, inter = 0;
  if (name == "lact_l24_d768_ttt2x") layers = 24, inter = 2;
  else if (name == "lact_l24_d768_ttt4x") layers = 24, inter = 4;
  else if (name == "lact_l14_d768_ttt2x") layers = 14, inter = 2;
  else throw Error(name, "unknown built-in config (known: lact_l24_d768_ttt2x, lact_l24_d768_ttt4x, lact_l14_d768_ttt2x)");
  nlohmann::json json = {
      {"patch_size", 8},
      {"dim", 768},
      {"layers", layers},
      {"block_config",
       {{{"type", "model.SelfAttention"}, {"length_dim", "l"}, {"params", {{"head_dim", 64}, {"use_qk_norm", true}}}},
        {{"type", "lact_ttt.FastWeightGluMLPMultihead"},
         {"length_dim", "vl"},
         {"params", {{"head_dim", 768}, {"inter_multi", inter}, {"base_lr", 0.01}, {"muon_update_steps", 5}}}},
        {{"type", "model.MLP"}, {"length_dim", "vl"}, {"params", {{"inter_multi", 4}}}}}}};
  return parse_model_config(json, name);
}

ModelConfig config_from_metadata(const SafetensorsFile& file) {
  const std::string& path = file.path();
  auto it = file.metadata().find("config");
  if (it == file.metadata().end())
    throw Error(path, "no model config in the safetensors metadata (__metadata__.config); convert the checkpoint "
                      "with tools/convert_checkpoint.py --config");
  const nlohmann::json json = parse_json_text(it->second, path + " (__metadata__.config)");
  return parse_model_config(json, path);
}

}  // namespace lact
