// The model configuration: the official YAML's fields (patch_size, dim, layers, block_config).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lact {

// The kinds of block module (per-view window attention, the large-chunk TTT layer, the full-attention baseline,
// the MLP) are described in core/module_kind.h, each in its own file under core/kinds/.
class ModuleKind;

// The TTT update variant of "Test-Time Training with KV Binding Is Secretly Linear Attention" (Liu et al.
// 2026), selected as the authors' code selects it: params.ttt_loss_type (see linear_attention_variants.md).
struct TttVariant {
  std::string key = "dot_product";  // the authors' ttt_loss_type; "dot_product" is the LaCT baseline
  bool only_w1 = false;             // W0 and W2 static: phi(x) = silu(x W0) * (x W2) is a fixed kernel, only W1 updates
  bool straight_qk = false;         // phi is the identity: o = q W1, W1 is [D, D] (inter_multi 1)
  bool lr1 = true;                  // the per-token learning rate eta (else the constant 1)
  bool weight_norm = true;          // the updated weights' column norms restored to the initial ones
  bool muon = true;                 // Newton-Schulz on the update
  // The state is W1 + a plain sum over tokens: the linear-attention form, split over tiles, views, processes.
  bool plain_sum() const { return only_w1 && !weight_norm; }
  std::string label() const;  // "baseline", "v1".."v6", or the key for the authors' other variants
};

// The authors' key for a readable preset ("baseline", "v1".."v4", "v6") or for a key itself; Error otherwise.
std::string ttt_variant_key(const std::string& preset_or_key);
// The variant a key selects (Error naming `where` for a key the authors' code does not define or lact
// does not implement).
TttVariant ttt_variant_from_key(const std::string& key, const std::string& where);

// A kind's own parameters (core/kinds/*.h derive theirs from this).
struct ModuleParams {
  virtual ~ModuleParams() = default;
};

struct ModuleConfig {
  const ModuleKind* kind = nullptr;            // its description (core/module_kind.h)
  std::string type;                            // the official class name, e.g. "lact_ttt.FastWeightGluMLPMultihead"
  std::string length_dim;                      // "l" (per view) or "vl" (whole sequence)
  std::shared_ptr<const ModuleParams> params;  // the kind's own parameter struct

  // The kind's parameters as its own struct (an internal error when the module is of another kind).
  template <typename P>
  const P& params_as() const {
    const P* p = dynamic_cast<const P*>(params.get());
    if (!p) throw_params_mismatch();
    return *p;
  }
  template <typename P>
  bool has_params() const {
    return dynamic_cast<const P*>(params.get()) != nullptr;
  }
  int heads(int dim) const;   // 0 for modules without heads (MLP)
  int hidden(int dim) const;  // the inner width: MLP int(dim * inter_multi); TTT int(head_dim * inter_multi)

 private:
  [[noreturn]] void throw_params_mismatch() const;
};

struct ModelConfig {
  int patch_size = 8;
  int dim = 768;
  int layers = 24;
  std::vector<ModuleConfig> block;  // the same module list for every layer
  nlohmann::json source;            // the JSON it was parsed from (saved back unchanged)

  int input_channels() const { return 12 * patch_size * patch_size; }  // [o, d, o x d, rgb] per pixel
  int output_channels() const { return 3 * patch_size * patch_size; }
  // Scene-state floats per layer for `input_tokens` input tokens (fast weights; KV caches grow with tokens).
  long long state_floats_per_layer(int64_t input_tokens) const;
  // The TTT variant of the model ("dot_product" when it has no TTT layer).
  TttVariant ttt_variant() const;
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

// A named official config ("lact_l24_d768_ttt2x", "lact_l24_d768_ttt4x", "lact_l14_d768_ttt2x"), optionally
// with a TTT variant ("NAME:v2", a preset or the authors' key). The straight_qk variants (V3-V6) use
// inter_multi 1, as the authors' code needs (their W1 is [D, D]).
ModelConfig builtin_model_config(const std::string& name);

// The config with every TTT module switched to `variant` (a preset or a key), re-parsed.
ModelConfig with_ttt_variant(const ModelConfig& config, const std::string& variant, const std::string& where);

}  // namespace lact
