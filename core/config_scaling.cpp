#include "core/config_scaling.h"

#include "core/error.h"

namespace lact {

ModelConfig scaled_config(const ModelConfig& config, int layers, int dim) {
  if (layers <= 0 && dim <= 0) return config;
  nlohmann::json json = config.source;  // parse_model_config keeps the body, never a "model" wrapper
  if (layers > 0) json["layers"] = layers;
  if (dim > 0) {
    json["dim"] = dim;
    nlohmann::json& modules = json.at("block_config");
    for (size_t i = 0; i < config.block.size(); ++i) {
      const ModuleKind kind = config.block[i].kind;
      if (kind == ModuleKind::WindowAttention || kind == ModuleKind::GlobalAttention)
        modules[i]["params"]["head_dim"] = dim % 64 == 0 ? 64 : dim;
      else if (kind == ModuleKind::FastWeightTTT)
        modules[i]["params"]["head_dim"] = dim;
    }
  }
  return parse_model_config(json, "scaled config");
}

ModelConfig with_full_attention(const ModelConfig& config) {
  const ModuleConfig* attention = nullptr;
  for (const ModuleConfig& m : config.block)
    if (!attention && (m.kind == ModuleKind::WindowAttention || m.kind == ModuleKind::GlobalAttention)) attention = &m;
  if (!attention && config.modules_of_kind(ModuleKind::FastWeightTTT) > 0)
    throw Error("full-attention config", "the block has no attention module to take the head size from");
  nlohmann::json json = config.source;
  nlohmann::json& modules = json.at("block_config");
  for (size_t i = 0; i < config.block.size(); ++i)
    if (config.block[i].kind == ModuleKind::FastWeightTTT)
      modules[i] = {{"type", "lact.GlobalAttention"},
                    {"length_dim", "vl"},
                    {"params", {{"head_dim", attention->head_dim}, {"use_qk_norm", true}}}};
  return parse_model_config(json, "full-attention config");
}

}  // namespace lact
