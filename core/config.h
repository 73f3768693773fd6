// The model configuration: the official YAML's fields (patch_size, dim, layers, block_config).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lact {

// WindowAttention: per-view attention (official model.SelfAttention, length_dim "l").
// FastWeightTTT: the large-chunk TTT layer (lact_ttt.FastWeightGluMLPMultihead).
// GlobalAttention: the paper's full-attention baseline in place of the TTT layer (type "lact.GlobalAttention"):
//   input tokens attend to every input token; target tokens to every input token and their own view.
// Mlp: model.MLP.
enum class ModuleKind { WindowAttention, FastWeightTTT, GlobalAttention, Mlp };

struct ModuleConfig {
  ModuleKind kind = ModuleKind::Mlp;
  std::string type;         // the official class name, e.g. "lact_ttt.FastWeightGluMLPMultihead"
  std::string length_dim;   // "l" (per view) or "vl" (whole sequence)
  int head_dim = 0;         // attention head dim, or fast-weight head dim
  bool use_qk_norm = true;  // window attention
  double inter_multi = 4;   // MLP hidden = dim * inter_multi; TTT hidden = head_dim * inter_multi
  double base_lr = 0.01;    // TTT
  int muon_update_steps = 0;  // TTT Newton-Schulz steps

  int heads(int dim) const { return head_dim > 0 ? dim / head_dim : 0; }  // 0 for modules without heads (MLP)
  int hidden(int dim) const;  // MLP: int(dim * inter_multi); TTT: int(head_dim * inter_multi)
};

struct ModelConfig {
  int patch_size = 8;
  int dim = 768;
  int layers = 24;
  std::vector<ModuleConfig> block;  // the same module list for every layer
  nlohmann::json source;            // the JSON it was parsed from (saved back unchanged)

  int input_channels() const { return 12 * patch_size * patch_size; }  // [o, d, o x d, rgb] per pixel
  int output_channels() const { return 3 * patch_size * patch_size; }
  int ttt_modules_per_block() const;
  int global_attention_modules_per_block() const;
  // Fast-weight floats per layer (all TTT modules of a block).
  long long fast_weight_floats_per_layer() const;
};

// Limits a config from an untrusted file must respect (checked before anything is sized from it): far above
// the paper's largest model (24 layers, dim 768, patch 8, 5 Newton-Schulz steps), far below what would
// overflow a size or hang an encode.
struct ConfigLimits {
  static constexpr int kMaxPatch = 64, kMaxDim = 16384, kMaxLayers = 1024, kMaxModulesPerBlock = 64;
  static constexpr int kMaxNewtonSchulzSteps = 64;
  static constexpr double kMaxInterMulti = 64;
};

// Parses and validates; `where` names the source (a file) in error messages.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& where);

class SafetensorsFile;
// The model config a model or scene-state file carries in __metadata__.config (Error naming the file if not).
ModelConfig config_from_metadata(const SafetensorsFile& file);

// A named official config ("lact_l24_d768_ttt2x", "lact_l24_d768_ttt4x", "lact_l14_d768_ttt2x").
ModelConfig builtin_model_config(const std::string& name);

}  // namespace lact
