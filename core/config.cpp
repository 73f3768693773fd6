#include "core/config.h"

#include <cstdint>
#include <type_traits>

#include "core/config_fields.h"
#include "core/kinds/ttt_kind.h"
#include "core/module_kind.h"
#include "core/safetensors.h"
#include "system/error.h"
#include "system/json_text.h"

namespace lact {

TttVariant ModelConfig::ttt_variant() const {
  for (const ModuleConfig& m : block)
    if (m.has_params<TttParams>()) return m.params_as<TttParams>().variant;
  return {};
}

namespace {

ModuleConfig parse_module(const nlohmann::json& entry, int dim, const std::string& where) {
  ModuleConfig m;
  m.type = field<std::string>(entry, "type", where);
  m.length_dim = optional_field<std::string>(entry, "length_dim", "vl", where);
  // The official model knows two: per view ("l") and the whole sequence ("vl"); kinds that ignore it (the MLP)
  // must not make another value look meaningful.
  if (m.length_dim != "l" && m.length_dim != "vl")
    throw Error(where, "config field 'length_dim' of '" + m.type.substr(0, 80) + "' is '" + m.length_dim.substr(0, 40) +
                           "': the official model knows 'l' (per view) and 'vl' (the whole sequence)");
  const nlohmann::json params = entry.contains("params") ? entry.at("params") : nlohmann::json::object();
  if (!params.is_object()) throw Error(where, "params of '" + m.type + "' is not a JSON object");
  const std::string class_name = m.type.substr(m.type.rfind('.') + 1);
  m.kind = module_kind_by_class(class_name);
  if (!m.kind) throw Error(where, "unknown block module type '" + m.type + "' (known: " + known_module_classes() + ")");
  if (optional_field<bool>(params, "bias", false, where)) throw Error(where, "biased Linear layers are not supported");
  m.params = m.kind->parse(params, m.length_dim, dim, where);
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

ModelConfig with_ttt_variant(const ModelConfig& config, const std::string& variant, const std::string& where) {
  const std::string key = ttt_variant_key(variant);
  nlohmann::json json = config.source;
  for (nlohmann::json& entry : json.at("block_config")) {
    const std::string type = entry.value("type", "");
    if (type.substr(type.rfind('.') + 1) != "FastWeightGluMLPMultihead") continue;
    nlohmann::json& params = entry["params"];
    params["ttt_loss_type"] = key;
    if (ttt_variant_from_key(key, where).straight_qk) params["inter_multi"] = 1;
  }
  return parse_model_config(json, where);
}

ModelConfig builtin_model_config(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  int layers = 0, inter = 0;
  if (name == "lact_l24_d768_ttt2x")
    layers = 24, inter = 2;
  else if (name == "lact_l24_d768_ttt4x")
    layers = 24, inter = 4;
  else if (name == "lact_l14_d768_ttt2x")
    layers = 14, inter = 2;
  else
    throw Error(name,
                "unknown built-in config (known: lact_l24_d768_ttt2x, lact_l24_d768_ttt4x, lact_l14_d768_ttt2x; "
                "add :VARIANT for a TTT variant, e.g. lact_l24_d768_ttt2x:v2)");
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
  const ModelConfig config = parse_model_config(json, name);
  return colon == std::string::npos ? config : with_ttt_variant(config, spec.substr(colon + 1), spec);
}

ModelConfig config_from_metadata(const SafetensorsFile& file) {
  const std::string& path = file.path();
  auto it = file.metadata().find("config");
  if (it == file.metadata().end())
    throw Error(path,
                "no model config in the safetensors metadata (__metadata__.config); convert the checkpoint "
                "with tools/convert_checkpoint.py --config");
  const nlohmann::json json = parse_json_text(it->second, path + " (__metadata__.config)");
  return parse_model_config(json, path);
}

}  // namespace lact
