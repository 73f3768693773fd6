#include "core/config_scaling.h"

#include "core/kinds/attention_kind.h"
#include "core/kinds/ttt_kind.h"
#include "system/error.h"

namespace lact {

ModelConfig scaled_config(const ModelConfig& config, int layers, int dim) {
  if (layers <= 0 && dim <= 0) return config;
  nlohmann::json json = config.source;  // parse_model_config keeps the body, never a "model" wrapper
  if (layers > 0) json["layers"] = layers;
  if (dim > 0) {
    json["dim"] = dim;
    nlohmann::json& modules = json.at("block_config");
    for (size_t i = 0; i < config.block.size(); ++i) {
      const ModuleConfig& m = config.block[i];
      if (m.has_params<AttentionParams>())
        modules[i]["params"]["head_dim"] = dim % 64 == 0 ? 64 : dim;
      else if (m.has_params<TttParams>())
        modules[i]["params"]["head_dim"] = dim;
    }
  }
  return parse_model_config(json, "scaled config");
}

ModelConfig with_full_attention(const ModelConfig& config) {
  const ModuleConfig* attention = nullptr;
  bool has_ttt = false;
  for (const ModuleConfig& m : config.block) {
    if (!attention && m.has_params<AttentionParams>()) attention = &m;
    has_ttt |= m.has_params<TttParams>();
  }
  if (!attention && has_ttt)
    throw Error("full-attention config", "the block has no attention module to take the head size from");
  nlohmann::json json = config.source;
  nlohmann::json& modules = json.at("block_config");
  for (size_t i = 0; i < config.block.size(); ++i)
    if (config.block[i].has_params<TttParams>())
      modules[i] = {
          {"type", "lact.GlobalAttention"},
          {"length_dim", "vl"},
          {"params", {{"head_dim", attention->params_as<AttentionParams>().head_dim}, {"use_qk_norm", true}}}};
  return parse_model_config(json, "full-attention config");
}

}  // namespace lact
