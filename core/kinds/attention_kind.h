// The parameters and tensors the two attention kinds share (per-view window attention and the full-attention
// baseline): heads of head_dim, to_qkv and c_proj, optional QK RMSNorms.
#pragma once

#include "core/module_kind.h"

namespace lact {

struct AttentionParams : ModuleParams {
  int head_dim = 0;
  bool use_qk_norm = true;
  int heads(int dim) const { return dim / head_dim; }
};

// Reads head_dim and use_qk_norm (the caller has refused unknown keys).
std::shared_ptr<AttentionParams> parse_attention_params(const nlohmann::json& params, int dim,
                                                        const std::string& where);
TensorList attention_tensors(const ModelConfig& c, const AttentionParams& p);
// The products of an attention over spans of `span` tokens: qkv, scores per span and head, out.
std::vector<GemmShape> attention_gemm_shapes(const ModelConfig& c, const AttentionParams& p, int64_t tokens,
                                             int64_t span);

// What both attention kinds answer alike: heads of head_dim, an inner width of dim, the same tensors.
class AttentionKind : public ModuleKind {
 public:
  int heads(const ModuleConfig& m, int dim) const override { return m.params_as<AttentionParams>().heads(dim); }
  int hidden(const ModuleConfig&, int dim) const override { return dim; }
  TensorList tensors(const ModelConfig& c, const ModuleConfig& m) const override {
    return attention_tensors(c, m.params_as<AttentionParams>());
  }
};

}  // namespace lact
