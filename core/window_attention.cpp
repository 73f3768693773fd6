#include <cmath>

#include "core/block_module.h"
#include "core/kinds/kind_list.h"
#include "core/layers.h"
#include "kernels/cuda/attention_library.h"

namespace lact {

// Q, K and V stay in the packed projection output: the qk norm runs in place on its q and k columns, the attention
// reads its heads as strided views and writes each head's output into its columns of [tokens, dim]. The packed
// output and the attention's are the backend's activation type (bf16 on CUDA at bf16, as the official code's
// autocast leaves a linear's output; the norm computes in float32 either way).
void window_attention(Backend& be, const AttentionParams& config, const AttentionWeights& w, const Tensor& y,
                      int64_t views, Tensor& out) {
  const int64_t tokens = y.dim(0), dim = y.dim(1);
  const int64_t per_view = tokens / views, head_dim = config.head_dim, heads = dim / head_dim;
  Tensor qkv = be.empty({tokens, 3 * dim}, be.activation_type());
  linear(be, y, w.qkv, qkv);
  if (config.use_qk_norm) {
    be.rms_norm_columns(qkv, 0, dim, w.q_norm, kQkNormEps);
    be.rms_norm_columns(qkv, dim, dim, w.k_norm, kQkNormEps);
  }
  Tensor attended = be.empty({views, per_view, dim}, be.activation_type());
  be.attention_packed(qkv.reshape({views, per_view, 3 * dim}), heads, head_dim,
                      1.0f / std::sqrt(static_cast<float>(head_dim)), attended);
  qkv = Tensor();  // free before the output projection
  linear_add(be, attended.reshape({tokens, dim}), w.out_proj, out);
}

}  // namespace lact

// ---- the forward pass of the kind (its description: core/kinds/window_attention_kind.cpp)
namespace lact {

namespace {

// Per-view attention (official model.SelfAttention with length_dim "l").
class WindowAttentionModule final : public BlockModule {
 public:
  const ModuleKind& kind() const override { return window_attention_kind(); }
  std::shared_ptr<const KindWeights> load(Backend& be, const ModuleConfig& m,
                                          const std::function<Tensor(const std::string&)>& get) const override {
    cuda::check_attention_head_dim(be, m.params_as<AttentionParams>().head_dim);  // before any work
    return load_attention(m.params_as<AttentionParams>(), get);
  }
  DType input_type(const Backend& be) const override { return be.activation_type(); }  // read by a product
  ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool /*output_needed*/) const override {
    const auto& p = ctx.config.params_as<AttentionParams>();
    const auto& w = ctx.weights.as<AttentionWeights>();
    const int64_t per_view = y.dim(0) / ctx.views;
    for_view_chunks(ctx.views, per_view, ctx.options.token_tile, [&](int64_t b, int64_t e) {
      Tensor o = out.slice(b * per_view, e * per_view);
      window_attention(ctx.be, p, w, y.slice(b * per_view, e * per_view), e - b, o);
    });
    return {};
  }
  void render(const ModuleContext& ctx, const ModuleState*, const Tensor& y, Tensor& out) const override {
    window_attention(ctx.be, ctx.config.params_as<AttentionParams>(), ctx.weights.as<AttentionWeights>(), y, ctx.views,
                     out);
  }
};

}  // namespace

std::shared_ptr<const KindWeights> load_attention(const AttentionParams& p,
                                                  const std::function<Tensor(const std::string&)>& get) {
  auto w = std::make_shared<AttentionWeights>();
  w->qkv = get("f.to_qkv.weight");
  w->out_proj = get("f.c_proj.weight");
  if (p.use_qk_norm) {
    w->q_norm = get("f.q_norm.weight");
    w->k_norm = get("f.k_norm.weight");
  }
  return w;
}

const BlockModule& window_attention_module() {
  static const WindowAttentionModule module;
  return module;
}

}  // namespace lact
