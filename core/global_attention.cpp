// The paper's full-attention baseline (lact_nvs_spec.md section 10.1): the TTT layer replaced by global
// attention. Encode keeps each layer's keys and values (the KV cache, growing with the input tokens);
// render lets each target view attend to the cache and to itself, so targets never see each other.
#include <cmath>

#include "core/kinds/kind_list.h"
#include "core/layers.h"
#include "kernels/cuda/attention_library.h"

namespace lact {

namespace {

struct HeadProjections {
  Tensor q, k, v;  // [views, heads, tokens, head_dim]
};

HeadProjections project(Backend& be, const AttentionParams& config, const AttentionWeights& w, const Tensor& y,
                        int64_t views) {
  const int64_t tokens = y.dim(0), dim = y.dim(1), per_view = tokens / views, hd = config.head_dim, heads = dim / hd;
  Tensor qkv = be.empty({tokens, 3 * dim});
  linear(be, y, w.qkv, qkv);
  const Tensor rows = qkv.reshape({views, per_view, 3 * dim});
  HeadProjections p{be.empty({views, heads, per_view, hd}), be.empty({views, heads, per_view, hd}),
                    be.empty({views, heads, per_view, hd})};
  be.split_heads(rows, 0, heads, hd, p.q);
  be.split_heads(rows, dim, heads, hd, p.k);
  be.split_heads(rows, 2 * dim, heads, hd, p.v);
  if (config.use_qk_norm) {
    be.rms_norm(p.q, w.q_norm, hd, kQkNormEps, p.q);
    be.rms_norm(p.k, w.k_norm, hd, kQkNormEps, p.k);
  }
  return p;
}

void merge_and_project(Backend& be, const AttentionWeights& w, const Tensor& heads_out, Tensor& out) {
  const int64_t views = heads_out.dim(0), heads = heads_out.dim(1), per_view = heads_out.dim(2), hd = heads_out.dim(3);
  Tensor merged = be.empty({views, per_view, heads * hd});
  be.merge_heads(heads_out, merged);
  linear_add(be, merged.reshape({views * per_view, heads * hd}), w.out_proj, out);
}

}  // namespace

KvCache global_attention_encode(Backend& be, const AttentionParams& config, const AttentionWeights& w, const Tensor& y,
                                Tensor& out, Collective* collective) {
  HeadProjections p = project(be, config, w, y, 1);
  const int64_t heads = p.q.dim(1), tokens = p.q.dim(2), hd = p.q.dim(3);
  const Shape batched{heads, tokens, hd};
  // Across ranks, this rank's queries attend to every rank's keys: the KV cache is gathered (rank order is
  // view order, as in one process), and every rank keeps it whole.
  const Tensor k = gather_token_rows(be, collective, p.k.reshape(batched));
  const Tensor v = gather_token_rows(be, collective, p.v.reshape(batched));
  Tensor attended = be.empty(batched);
  be.attention(p.q.reshape(batched), k, v, 1.0f / std::sqrt(float(hd)), attended);
  merge_and_project(be, w, attended.reshape({1, heads, tokens, hd}), out);
  return {k, v};
}

void global_attention_render(Backend& be, const AttentionParams& config, const AttentionWeights& w,
                             const KvCache& cache, const Tensor& y, int64_t views, Tensor& out) {
  HeadProjections p = project(be, config, w, y, views);
  const int64_t heads = p.q.dim(1), per_view = p.q.dim(2), hd = p.q.dim(3), inputs = cache.k.dim(1);
  const int64_t keys = inputs + per_view;
  Tensor k_all = be.empty({heads, keys, hd}), v_all = be.empty({heads, keys, hd});
  Tensor attended = be.empty({views, heads, per_view, hd});
  // The cache goes first in every head; each view then writes its own keys after it.
  be.copy_blocks(k_all.data(), keys * hd, cache.k.data(), inputs * hd, inputs * hd, heads);
  be.copy_blocks(v_all.data(), keys * hd, cache.v.data(), inputs * hd, inputs * hd, heads);
  for (int64_t view = 0; view < views; ++view) {
    const int64_t offset = view * heads * per_view * hd;
    be.copy_blocks(k_all.data() + inputs * hd, keys * hd, p.k.data() + offset, per_view * hd, per_view * hd, heads);
    be.copy_blocks(v_all.data() + inputs * hd, keys * hd, p.v.data() + offset, per_view * hd, per_view * hd, heads);
    Tensor o = attended.slice(view, view + 1).reshape({heads, per_view, hd});
    be.attention(p.q.slice(view, view + 1).reshape({heads, per_view, hd}), k_all, v_all, 1.0f / std::sqrt(float(hd)),
                 o);
  }
  merge_and_project(be, w, attended, out);
}

}  // namespace lact

// ---- the forward pass of the kind (its description: core/kinds/global_attention_kind.cpp)
namespace lact {

namespace {

// The full-attention baseline (type "lact.GlobalAttention"); its state is the KV cache of the input tokens.
class GlobalAttentionModule final : public BlockModule {
 public:
  const ModuleKind& kind() const override { return global_attention_kind(); }
  std::shared_ptr<const KindWeights> load(Backend& be, const ModuleConfig& m,
                                          const std::function<Tensor(const std::string&)>& get) const override {
    cuda::check_attention_head_dim(be, m.params_as<AttentionParams>().head_dim);  // before any work
    return load_attention(m.params_as<AttentionParams>(), get);
  }
  DType input_type(const Backend& be) const override { return be.activation_type(); }  // read by a product
  ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool /*output_needed*/) const override {
    const KvCache cache = global_attention_encode(ctx.be, ctx.config.params_as<AttentionParams>(),
                                                  ctx.weights.as<AttentionWeights>(), y, out, ctx.collective);
    return {{{"k_cache", cache.k}, {"v_cache", cache.v}}};
  }
  // Every token attends to every token: no chunks of views (its KV cache grows with them anyway).
  bool streams(const ModuleConfig&, const ModelOptions&, int64_t) const override { return false; }
  void render(const ModuleContext& ctx, const ModuleState* state, const Tensor& y, Tensor& out) const override {
    global_attention_render(ctx.be, ctx.config.params_as<AttentionParams>(), ctx.weights.as<AttentionWeights>(),
                            {state->at("k_cache"), state->at("v_cache")}, y, ctx.views, out);
  }
};

}  // namespace

const BlockModule& global_attention_module() {
  static const GlobalAttentionModule module;
  return module;
}

}  // namespace lact
