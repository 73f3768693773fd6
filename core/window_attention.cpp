#include <cfloat>
#include <cmath>

#include "core/block_module.h"
#include "core/config_fields.h"
#include "core/error.h"
#include "core/layers.h"

namespace lact {

namespace {
// nn.RMSNorm(head_dim) with eps=None uses torch.finfo(float32).eps.
constexpr float kQkNormEps = FLT_EPSILON;
}  // namespace

void window_attention(Backend& be, const ModuleConfig& config, const ModuleWeights& w, const Tensor& y, int64_t views,
                      Tensor& out) {
  const int64_t tokens = y.dim(0), dim = y.dim(1);
  const int64_t per_view = tokens / views, head_dim = config.head_dim, heads = dim / head_dim;
  Tensor qkv = be.empty({tokens, 3 * dim});
  linear(be, y, w.qkv, qkv);
  const Tensor qkv_views = qkv.reshape({views, per_view, 3 * dim});
  Tensor q = be.empty({views, heads, per_view, head_dim});
  Tensor k = be.empty(q.shape()), v = be.empty(q.shape());
  be.split_heads(qkv_views, 0, heads, head_dim, q);
  be.split_heads(qkv_views, dim, heads, head_dim, k);
  be.split_heads(qkv_views, 2 * dim, heads, head_dim, v);
  qkv = Tensor();  // free before the attention scratch
  if (config.use_qk_norm) {
    be.rms_norm(q, w.q_norm, head_dim, kQkNormEps, q);
    be.rms_norm(k, w.k_norm, head_dim, kQkNormEps, k);
  }
  const Shape batched = {views * heads, per_view, head_dim};
  Tensor attended = be.empty(batched);
  be.attention(q.reshape(batched), k.reshape(batched), v.reshape(batched),
               1.0f / std::sqrt(static_cast<float>(head_dim)), attended);
  Tensor merged = be.empty({views, per_view, dim});
  be.merge_heads(attended.reshape({views, heads, per_view, head_dim}), merged);
  linear(be, merged.reshape({tokens, dim}), w.out_proj, out);
}

}  // namespace lact

// ---- the module kind
namespace lact {

namespace {

// Per-view attention (official model.SelfAttention with length_dim "l").
class WindowAttentionModule final : public BlockModule {
 public:
  ModuleKind kind() const override { return ModuleKind::WindowAttention; }
  const char* class_name() const override { return "SelfAttention"; }
  std::string describe(const ModelConfig& c, const ModuleConfig& m) const override {
    return "window attention, " + std::to_string(m.heads(c.dim)) + " heads x " + std::to_string(m.head_dim) +
           ", qk norm " + (m.use_qk_norm ? "on" : "off");
  }
  void parse(const nlohmann::json& params, int, ModuleConfig& m, const std::string& where) const override {
    refuse_unknown_params(params, {"head_dim", "use_qk_norm", "causal", "bias"}, "SelfAttention", where);
    m.head_dim = field<int>(params, "head_dim", where);
    m.use_qk_norm = optional_field<bool>(params, "use_qk_norm", true, where);
    if (optional_field<bool>(params, "causal", false, where))
      throw Error(where, "causal SelfAttention is not supported (LaCT NVS uses bidirectional attention)");
    if (m.length_dim != "l")
      throw Error(where, "SelfAttention over the whole sequence (length_dim '" + m.length_dim +
                             "') is not supported yet: only per-view window attention (length_dim 'l')");
  }
  TensorList tensors(const ModelConfig& c, const ModuleConfig& m) const override { return attention_tensors(c, m); }
  void load(Backend&, const ModuleConfig& m, const std::function<Tensor(const std::string&)>& get,
            ModuleWeights& w) const override {
    load_attention(m, get, w);
  }
  ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool /*output_needed*/) const override {
    const int64_t per_view = y.dim(0) / ctx.views;
    for_view_chunks(ctx.views, per_view, ctx.options.token_tile, [&](int64_t b, int64_t e) {
      Tensor o = out.slice(b * per_view, e * per_view);
      window_attention(ctx.be, ctx.config, ctx.weights, y.slice(b * per_view, e * per_view), e - b, o);
    });
    return {};
  }
  void render(const ModuleContext& ctx, const ModuleState*, const Tensor& y, Tensor& out) const override {
    window_attention(ctx.be, ctx.config, ctx.weights, y, ctx.views, out);
  }
  double encode_flops(const ModelConfig& c, const ModuleConfig&, double n, double per_view) const override {
    return 2.0 * n * c.dim * 4 * c.dim + 4.0 * n * per_view * c.dim;
  }
  double render_flops(const ModelConfig& c, const ModuleConfig&, double n, double) const override {
    return 2.0 * n * c.dim * 4 * c.dim + 4.0 * n * n * c.dim;
  }
  double encode_scratch_floats(const ModelConfig& c, const ModuleConfig&, const ModelOptions&, double, double,
                               double chunk) const override {
    // qkv + q, k, v (qkv is freed before attention); attended, merged.
    const double dim = c.dim;
    return std::max(3 * chunk * dim + 3 * chunk * dim, 3 * chunk * dim + 2 * chunk * dim);
  }
};

}  // namespace

TensorList attention_tensors(const ModelConfig& c, const ModuleConfig& m) {
  const int64_t dim = c.dim;
  TensorList names = {{"f.to_qkv.weight", {3 * dim, dim}}, {"f.c_proj.weight", {dim, dim}}};
  if (m.use_qk_norm) names.insert(names.end(), {{"f.q_norm.weight", {m.head_dim}}, {"f.k_norm.weight", {m.head_dim}}});
  return names;
}

void load_attention(const ModuleConfig& m, const std::function<Tensor(const std::string&)>& get, ModuleWeights& w) {
  w.qkv = get("f.to_qkv.weight");
  w.out_proj = get("f.c_proj.weight");
  if (m.use_qk_norm) {
    w.q_norm = get("f.q_norm.weight");
    w.k_norm = get("f.k_norm.weight");
  }
}

const BlockModule& window_attention_module() {
  static const WindowAttentionModule module;
  return module;
}

}  // namespace lact
