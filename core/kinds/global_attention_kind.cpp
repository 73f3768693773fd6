// The full-attention baseline (type "lact.GlobalAttention", lact_nvs_spec.md section 10.1): its params,
// tensors, KV-cache state, FLOPs, scratch and products. The forward pass is core/global_attention.cpp.
#include "core/config_fields.h"
#include "core/kinds/attention_kind.h"
#include "core/kinds/kind_list.h"

namespace lact {

namespace {

class GlobalAttentionKind final : public AttentionKind {
 public:
  const char* class_name() const override { return "GlobalAttention"; }
  std::shared_ptr<const ModuleParams> parse(const nlohmann::json& params, const std::string&, int dim,
                                            const std::string& where) const override {
    refuse_unknown_params(params, {"head_dim", "use_qk_norm", "bias"}, "GlobalAttention", where);
    auto p = parse_attention_params(params, dim, where);
    check_head_dim(p->head_dim, dim, where);
    return p;
  }
  std::string describe(const ModelConfig& c, const ModuleConfig& m) const override {
    const auto& p = m.params_as<AttentionParams>();
    return "global attention (full-attention baseline, KV cache), " + std::to_string(p.heads(c.dim)) + " heads of " +
           std::to_string(p.head_dim);
  }
  // The state is the KV cache of the input tokens, gathered from every rank.
  RankExchange rank_exchange() const override { return RankExchange::Gather; }
  TensorList state_tensors(const ModelConfig& c, const ModuleConfig& m, int64_t tokens) const override {
    const auto& p = m.params_as<AttentionParams>();
    const Shape cache{p.heads(c.dim), tokens, p.head_dim};
    return {{"k_cache", cache}, {"v_cache", cache}};
  }
  double encode_flops(const ModelConfig& c, const ModuleConfig&, double n, double) const override {
    return 2.0 * n * c.dim * 4 * c.dim + 4.0 * n * n * c.dim;
  }
  double render_flops(const ModelConfig& c, const ModuleConfig&, double n, double inputs) const override {
    return 2.0 * n * c.dim * 4 * c.dim + 4.0 * n * (n + inputs) * c.dim;
  }
  double encode_scratch_floats(const ModelConfig& c, const ModuleConfig&, const ModelOptions&, double tokens,
                               double per_view, double) const override {
    // qkv + per-view q, k, v; then keys (inputs + one view) for every head, attended, merged.
    const double dim = c.dim;
    return 6 * tokens * dim + 2 * (tokens + per_view) * dim + 2 * tokens * dim;
  }
  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, const ModuleConfig& m, int64_t tokens,
                                     int64_t) const override {
    return attention_gemm_shapes(c, m.params_as<AttentionParams>(), tokens, tokens);
  }
};

}  // namespace

const ModuleKind& global_attention_kind() {
  static const GlobalAttentionKind kind;
  return kind;
}

}  // namespace lact
