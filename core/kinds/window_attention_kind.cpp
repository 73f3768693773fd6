// Per-view window attention (official model.SelfAttention with length_dim "l"): its params, tensors, FLOPs,
// scratch and products. The forward pass is core/window_attention.cpp.
#include <algorithm>

#include "core/config_fields.h"
#include "core/kinds/attention_kind.h"
#include "core/kinds/kind_list.h"
#include "system/error.h"

namespace lact {

namespace {

class WindowAttentionKind final : public AttentionKind {
 public:
  const char* class_name() const override { return "SelfAttention"; }
  std::shared_ptr<const ModuleParams> parse(const nlohmann::json& params, const std::string& length_dim, int dim,
                                            const std::string& where) const override {
    refuse_unknown_params(params, {"head_dim", "use_qk_norm", "causal", "bias"}, "SelfAttention", where);
    auto p = parse_attention_params(params, dim, where);
    if (optional_field<bool>(params, "causal", false, where))
      throw Error(where, "causal SelfAttention is not supported (LaCT NVS uses bidirectional attention)");
    if (length_dim != "l")
      throw Error(where, "SelfAttention over the whole sequence (length_dim '" + length_dim +
                             "') is not supported yet: only per-view window attention (length_dim 'l')");
    check_head_dim(p->head_dim, dim, where);
    return p;
  }
  std::string describe(const ModelConfig& c, const ModuleConfig& m) const override {
    const auto& p = m.params_as<AttentionParams>();
    return "window attention, " + std::to_string(p.heads(c.dim)) + " heads x " + std::to_string(p.head_dim) +
           ", qk norm " + (p.use_qk_norm ? "on" : "off");
  }
  double encode_flops(const ModelConfig& c, const ModuleConfig&, double n, double per_view) const override {
    return 2.0 * n * c.dim * 4 * c.dim + 4.0 * n * per_view * c.dim;
  }
  double render_flops(const ModelConfig& c, const ModuleConfig&, double n, double) const override {
    return 2.0 * n * c.dim * 4 * c.dim + 4.0 * n * n * c.dim;
  }
  double encode_scratch_floats(const ModelConfig& c, const ModuleConfig&, const ModelOptions&, double, double,
                               double chunk) const override {
    // The packed attention: qkv and its output (4 dim a token); the CUDA backend's split fallback (fp32, tf32, other
    // head dims) adds q, k, v and o scratch of half the views (2 dim a token). Counted as before the packed op
    // (qkv + q, k, v; then q, k, v + attended + merged): 6 dim a token bounds both.
    const double dim = c.dim;
    return std::max(3 * chunk * dim + 3 * chunk * dim, 3 * chunk * dim + 2 * chunk * dim);
  }
  std::vector<double> render_block_floats(const ModelConfig& c, const ModuleConfig&, const ModelOptions&, double tokens,
                                          double) const override {
    return {3 * tokens * c.dim,
            tokens * c.dim};  // the packed attention's qkv and its output (core/window_attention.cpp)
  }
  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, const ModuleConfig& m, int64_t tokens,
                                     int64_t per_view) const override {
    return attention_gemm_shapes(c, m.params_as<AttentionParams>(), tokens, per_view);
  }
};

}  // namespace

std::shared_ptr<AttentionParams> parse_attention_params(const nlohmann::json& params, int, const std::string& where) {
  auto p = std::make_shared<AttentionParams>();
  p->head_dim = field<int>(params, "head_dim", where);
  p->use_qk_norm = optional_field<bool>(params, "use_qk_norm", true, where);
  return p;
}

TensorList attention_tensors(const ModelConfig& c, const AttentionParams& p) {
  const int64_t dim = c.dim;
  TensorList names = {{"f.to_qkv.weight", {3 * dim, dim}}, {"f.c_proj.weight", {dim, dim}}};
  if (p.use_qk_norm) names.insert(names.end(), {{"f.q_norm.weight", {p.head_dim}}, {"f.k_norm.weight", {p.head_dim}}});
  return names;
}

std::vector<GemmShape> attention_gemm_shapes(const ModelConfig& c, const AttentionParams& p, int64_t tokens,
                                             int64_t span) {
  const int64_t d = c.dim, heads = p.heads(c.dim);
  return {{"attention qkv", tokens, 3 * d, d, 1, true},
          {"attention scores (per window and head)", span, span, p.head_dim,
           std::min<int64_t>(heads * (tokens / span), 64), true},
          {"attention out", tokens, d, d, 1, true}};
}

const ModuleKind& window_attention_kind() {
  static const WindowAttentionKind kind;
  return kind;
}

}  // namespace lact
