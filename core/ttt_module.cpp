// The large-chunk TTT layer's forward pass as a block module (its description: core/kinds/ttt_kind.cpp): its
// weights with the weight-norm targets, encode (the update, then the apply) and render, for the baseline and
// for the linear-attention variants.
#include "core/block_module.h"
#include "core/layers.h"

namespace lact {

const ModuleKind& fast_weight_ttt_kind();

namespace {

std::shared_ptr<const KindWeights> load_ttt(Backend& be, const TttParams& m,
                                            const std::function<Tensor(const std::string&)>& get) {
  auto w = std::make_shared<TttWeights>();
  for (auto [field, name] : {std::pair{&w->w0, "f.w0"},
                             {&w->w1, "f.w1"},
                             {&w->w2, "f.w2"},
                             {&w->qkv, "f.to_qkv.weight"},
                             {&w->out_proj, "f.c_proj.weight"},
                             {&w->lr_weight, "f.lr_fc.weight"},
                             {&w->lr_bias, "f.lr_fc.bias"},
                             {&w->o_norm, "f.o_norm.weight"}})
    *field = get(name);
  // The weight-norm targets: column norms of the initial fast weights (W1's only, when only W1 updates).
  const int64_t heads = w->w0.dim(0);
  w->w1_norms = be.empty({heads, w->w1.dim(2)});
  be.column_norms(w->w1, w->w1_norms);
  if (m.variant.only_w1) return w;
  w->w0_norms = be.empty({heads, w->w0.dim(2)});
  w->w2_norms = be.empty({heads, w->w2.dim(2)});
  be.column_norms(w->w0, w->w0_norms);
  be.column_norms(w->w2, w->w2_norms);
  return w;
}

class FastWeightTttModule final : public BlockModule {
 public:
  const ModuleKind& kind() const override { return fast_weight_ttt_kind(); }
  std::shared_ptr<const KindWeights> load(Backend& be, const ModuleConfig& m,
                                          const std::function<Tensor(const std::string&)>& get) const override {
    return load_ttt(be, m.params_as<TttParams>(), get);
  }
  ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool output_needed) const override {
    const auto& m = ctx.config.params_as<TttParams>();
    const auto& w = ctx.weights.as<TttWeights>();
    const TttProjections p = ttt_project(ctx.be, m, w, y, true);
    ModuleState state;
    FastWeights fast;
    if (m.variant.only_w1) {
      fast = {w.w0, ttt_update_w1(ctx.be, m, w, p, ctx.options, ctx.collective), w.w2};
      state.tensors = {{"w1", fast.w1}};
    } else {
      fast = ttt_update(ctx.be, m, w, p, ctx.options.newton_schulz, ctx.options.token_tile, ctx.collective);
      state.tensors = {{"w0", fast.w0}, {"w1", fast.w1}, {"w2", fast.w2}};
    }
    if (output_needed) ttt_apply(ctx.be, m, w, fast, p.q, ctx.options.token_tile, out);
    return state;
  }
  void render(const ModuleContext& ctx, const ModuleState* state, const Tensor& y, Tensor& out) const override {
    const auto& m = ctx.config.params_as<TttParams>();
    const auto& w = ctx.weights.as<TttWeights>();
    const TttProjections p = ttt_project(ctx.be, m, w, y, false);
    const FastWeights fast = m.variant.only_w1 ? FastWeights{w.w0, state->at("w1"), w.w2}
                                               : FastWeights{state->at("w0"), state->at("w1"), state->at("w2")};
    ttt_apply(ctx.be, m, w, fast, p.q, ctx.options.token_tile, out);
  }
};

}  // namespace

const BlockModule& fast_weight_ttt_module() {
  static const FastWeightTttModule module;
  return module;
}

}  // namespace lact
