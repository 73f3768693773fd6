// The large-chunk TTT layer's forward pass as a block module (its description: core/kinds/ttt_kind.cpp): its
// weights with the weight-norm targets, encode (the update, then the apply) and render, for the baseline and
// for the linear-attention variants.
#include <algorithm>
#include <utility>

#include "core/block_module.h"
#include "core/kinds/kind_list.h"
#include "core/layers.h"

namespace lact {

namespace {

std::shared_ptr<const KindWeights> load_ttt(Backend& be, const TttParams& m,
                                            const std::function<Tensor(const std::string&)>& get) {
  auto w = std::make_shared<TttWeights>();
  for (auto [field, name] : {std::pair{&w->w1, "f.w1"},
                             {&w->qkv, "f.to_qkv.weight"},
                             {&w->out_proj, "f.c_proj.weight"},
                             {&w->lr_weight, "f.lr_fc.weight"},
                             {&w->lr_bias, "f.lr_fc.bias"},
                             {&w->o_norm, "f.o_norm.weight"}})
    *field = get(name);
  // W0 and W2 side by side, so that one product applies both (the file's tensors are not kept).
  w->w02 = pack_w02(be, get("f.w0"), get("f.w2"));
  be.mark_constant(w->w02);
  // The weight-norm targets: column norms of the initial fast weights (W1's only, when only W1 updates).
  const int64_t heads = w->w1.dim(0);
  w->w1_norms = be.empty({heads, w->w1.dim(2)});
  be.column_norms(w->w1, w->w1_norms);
  if (m.variant.only_w1) return w;
  w->w02_norms = be.empty({heads, w->w02.dim(2)});
  be.column_norms(w->w02, w->w02_norms);
  return w;
}

// The dense route's update, chunked or not: the directions summed over tiles of whole views (at most a token
// tile, at least one view), so that an encode in chunks of whole tiles sums exactly the tiles an encode of all
// the views sums (Newton-Schulz would carry a different summation order's rounding, about 500x, into the state).
class DenseUpdate {
 public:
  explicit DenseUpdate(const ModuleContext& ctx)
      : ctx_(ctx), m_(ctx.config.params_as<TttParams>()), w_(ctx.weights.as<TttWeights>()) {
    dw_.w1 = ctx.be.zeros(w_.w1.shape());
    if (m_.variant.only_w1) return;
    dw_.w02 = ctx.be.zeros(w_.w02.shape());
    // The initial weights in the heads' storage (bf16 copies on CUDA at bf16) once, not once per tile.
    const DType heads = ttt_head_type(ctx.be, m_);
    products_ = {stored_as(ctx.be, w_.w02, heads), stored_as(ctx.be, w_.w1, heads)};
  }
  // Adds the directions of p's tokens: `views` whole views.
  void add(const TttProjections& p, int64_t views) {
    const int64_t tokens = p.k.dim(1), per_view = tokens / std::max<int64_t>(1, views);
    const int64_t tile = update_tile_views(ctx_.options, per_view) * per_view;
    for (int64_t begin = 0; begin < tokens; begin += tile) {
      const int64_t end = std::min(tokens, begin + tile);
      if (m_.variant.only_w1)
        ttt_accumulate_w1(ctx_.be, m_, w_, p, begin, end, dw_.w1);
      else
        ttt_accumulate_directions(ctx_.be, products_, p, begin, end, dw_);
    }
  }
  // Summed across ranks, then Newton-Schulz and the weight norm once.
  FastWeights finish() {
    Backend& be = ctx_.be;
    if (m_.variant.only_w1) {
      if (ctx_.collective) ctx_.collective->all_reduce_sum(be, dw_.w1);
      return {w_.w02, ttt_finish_w1(be, m_, w_, dw_.w1)};
    }
    if (ctx_.collective)
      for (Tensor* delta : {&dw_.w02, &dw_.w1}) ctx_.collective->all_reduce_sum(be, *delta);
    return ttt_finish_update(be, m_, w_, initial_fast_weights(w_), dw_);
  }

 private:
  const ModuleContext& ctx_;
  const TttParams& m_;
  const TttWeights& w_;
  FastWeights dw_;
  FastWeights products_;  // what the directions' products read: the initial weights, in the heads' storage
};

// Whether the update takes the dense route (the low-rank one and the gradient-step form keep every token's
// factors, and do not stream).
bool dense_route(const TttParams& m, const ModelOptions& o, int64_t tokens) {
  const int steps = m.muon_update_steps;
  if (!m.variant.only_w1)
    return !ttt_low_rank_route(o.newton_schulz, tokens, o.token_tile, m.head_dim, m.hidden(), steps);
  if (o.ttt_update_form != TttUpdateForm::LinearAttention) return false;
  return !(m.variant.muon && steps > 0 &&
           ttt_low_rank_route(o.newton_schulz, tokens, o.token_tile, m.hidden(), m.head_dim, steps));
}

// The state holds W0, W1 and W2 as separate tensors (the state file's layout; W1 only for a variant). Called once
// the apply is done and its inputs are gone, so the split copies add to nothing else.
ModuleState state_of(Backend& be, const TttParams& m, FastWeights fast) {
  ModuleState state;
  if (m.variant.only_w1) {
    state.tensors = {{"w1", fast.w1}};
    return state;
  }
  Tensor w0, w2;
  unpack_w02(be, fast.w02, w0, w2);
  state.tensors = {{"w0", w0}, {"w1", fast.w1}, {"w2", w2}};
  return state;
}

// The update of p's tokens: the dense route's (one tile of views at a time), a variant's W1-only one, or the
// low-rank route's.
FastWeights update_of(const ModuleContext& ctx, const TttParams& m, const TttWeights& w, const TttProjections& p) {
  if (dense_route(m, ctx.options, sum_over_ranks(ctx.collective, p.k.dim(1)))) {
    DenseUpdate update(ctx);
    update.add(p, ctx.views);
    return update.finish();
  }
  if (m.variant.only_w1) return {w.w02, ttt_update_w1(ctx.be, m, w, p, ctx.options, ctx.collective)};
  return ttt_update(ctx.be, m, w, p, ctx.options.newton_schulz, ctx.options.token_tile, ctx.collective);
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
    FastWeights fast;
    {
      const TttProjections p = ttt_project(ctx.be, m, w, y, true);
      fast = update_of(ctx, m, w, p);
      if (output_needed) ttt_apply(ctx.be, m, w, fast, p.q, ctx.options.token_tile, out);
    }
    return state_of(ctx.be, m, std::move(fast));
  }
  bool streams(const ModuleConfig& mc, const ModelOptions& o, int64_t tokens) const override {
    return dense_route(mc.params_as<TttParams>(), o, tokens);
  }
  // Two passes over the chunks: the keys into the update, then the queries through the updated weights.
  ModuleState encode_streamed(const ModuleContext& ctx, const ViewChunks& chunks, bool output_needed) const override {
    const auto& m = ctx.config.params_as<TttParams>();
    const auto& w = ctx.weights.as<TttWeights>();
    DenseUpdate update(ctx);
    chunks.each([&](const ModuleContext& chunk, const Tensor& y,
                    Tensor&) { update.add(ttt_project_keys(chunk.be, m, w, y), chunk.views); },
                false);
    FastWeights fast = update.finish();
    if (!output_needed) return state_of(ctx.be, m, std::move(fast));
    chunks.each(
        [&](const ModuleContext& chunk, const Tensor& y, Tensor& out) {
          const TttProjections p = ttt_project(chunk.be, m, w, y, false);
          ttt_apply(chunk.be, m, w, fast, p.q, chunk.options.token_tile, out);
        },
        true);
    return state_of(ctx.be, m, std::move(fast));
  }
  void render(const ModuleContext& ctx, const ModuleState* state, const Tensor& y, Tensor& out) const override {
    const auto& m = ctx.config.params_as<TttParams>();
    const auto& w = ctx.weights.as<TttWeights>();
    const TttProjections p = ttt_project(ctx.be, m, w, y, false);
    if (m.variant.only_w1)  // W0 and W2 are the model's, [W0|W2] packed at load
      ttt_apply(ctx.be, m, w, {w.w02, state->at("w1")}, p.q, ctx.options.token_tile, out);
    else
      ttt_apply_state(ctx.be, m, w, state->at("w0"), state->at("w1"), state->at("w2"), p.q, ctx.options.token_tile,
                      out);
  }
};

}  // namespace

const BlockModule& fast_weight_ttt_module() {
  static const FastWeightTttModule module;
  return module;
}

}  // namespace lact
