// The large-chunk TTT layer (lact_ttt.FastWeightGluMLPMultihead) as a module kind: its params (with the
// authors' variant key), tensors, state, FLOPs, scratch memory and products, for the baseline and for the
// linear-attention variants. The forward pass is core/ttt_module.cpp (core/ttt_layer.cpp, ttt_w1_update.cpp).
#include "core/kinds/ttt_kind.h"

#include <algorithm>
#include <cstdio>

#include "core/config_fields.h"
#include "core/kinds/kind_list.h"
#include "kernels/newton_schulz_flops.h"
#include "system/error.h"

namespace lact {

namespace {

// The params the authors' code reads; grad_calc_method, use_fused and no_query only where they leave the
// numbers as lact computes them.
void parse_variant_params(const nlohmann::json& params, TttParams& m, const std::string& where) {
  m.variant = ttt_variant_from_key(optional_field<std::string>(params, "ttt_loss_type", "dot_product", where), where);
  const std::string grad = optional_field<std::string>(params, "grad_calc_method", "mannual", where);
  if (grad != "mannual")
    throw Error(where,
                "grad_calc_method '" + grad.substr(0, 40) + "' is not implemented (only the authors' \"mannual\")");
  if (optional_field<bool>(params, "no_query", false, where))
    throw Error(where, "no_query (keys in place of queries) is not implemented in lact");
  // The authors' fused path differs from their per-variant files (it weight-norms W1 even for *_no_wn).
  if (optional_field<bool>(params, "use_fused", false, where) && m.variant.key != "dot_product")
    throw Error(where, "use_fused with ttt_loss_type '" + m.variant.key +
                           "' is not implemented (lact follows the authors' per-variant files, use_fused false)");
  if (optional_field<bool>(params, "use_learnable_opt", false, where))
    throw Error(where, "use_learnable_opt (learned optimizers) is not implemented in lact");
  if (m.variant.straight_qk && m.inter_multi != 1.0) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", m.inter_multi);
    throw Error(where, "ttt_loss_type '" + m.variant.key +
                           "' multiplies q [.., D] by W1 [d_h, D], so it needs inter_multi 1 (got " + got + ")");
  }
}

std::shared_ptr<TttParams> parse_ttt_params(const nlohmann::json& params, const std::string& length_dim,
                                            const std::string& where) {
  auto m = std::make_shared<TttParams>();
  m->head_dim = field<int>(params, "head_dim", where);
  m->inter_multi = optional_field<double>(params, "inter_multi", 1.0, where);
  m->base_lr = optional_field<double>(params, "base_lr", 0.01, where);
  m->muon_update_steps = optional_field<int>(params, "muon_update_steps", 0, where);
  if (!(m->base_lr > 0 && m->base_lr < 1e6)) throw Error(where, "TTT base_lr must be a positive number below 1e6");
  if (m->muon_update_steps < 0 || m->muon_update_steps > ConfigLimits::kMaxNewtonSchulzSteps)
    throw Error(where, "muon_update_steps " + std::to_string(m->muon_update_steps) + " is outside [0, " +
                           std::to_string(ConfigLimits::kMaxNewtonSchulzSteps) + "]");
  if (length_dim != "vl")
    throw Error(where, "a TTT layer per view (length_dim '" + length_dim + "') is not supported: only 'vl'");
  parse_variant_params(params, *m, where);
  return m;
}

double ttt_encode_scratch_floats(const ModelConfig& c, const TttParams& m, const ModelOptions& o, double tokens,
                                 bool streamed);

class FastWeightTttKind final : public ModuleKind {
 public:
  const char* class_name() const override { return "FastWeightGluMLPMultihead"; }
  std::shared_ptr<const ModuleParams> parse(const nlohmann::json& params, const std::string& length_dim, int dim,
                                            const std::string& where) const override {
    refuse_unknown_params(params,
                          {"head_dim", "inter_multi", "base_lr", "muon_update_steps", "bias", "ttt_loss_type",
                           "grad_calc_method", "no_query", "use_fused", "use_learnable_opt", "n_blocks_per_opt"},
                          "FastWeightGluMLPMultihead", where);
    auto p = parse_ttt_params(params, length_dim, where);
    check_head_dim(p->head_dim, dim, where);
    check_inter_multi(p->inter_multi, p->hidden(), where);
    return p;
  }
  std::string describe(const ModelConfig& c, const ModuleConfig& mc) const override {
    const TttParams& m = mc.params_as<TttParams>();
    const TttVariant& v = m.variant;
    char lr[32];
    std::snprintf(lr, sizeof lr, "%g", m.base_lr);
    std::string text = std::string("large-chunk TTT (") +
                       (v.straight_qk ? "linear fast weight, phi = identity), " : "SwiGLU fast weights), ") +
                       std::to_string(m.heads(c.dim)) + " fast-weight head(s) x " + std::to_string(m.head_dim) +
                       ", hidden " + std::to_string(m.hidden()) + ", base lr " + lr + ", Newton-Schulz steps " +
                       std::to_string(m.muon_update_steps) + ", variant " + v.label();
    if (v.key != "dot_product") text += " (" + v.key + ")";
    return text;
  }
  int heads(const ModuleConfig& m, int dim) const override { return m.params_as<TttParams>().heads(dim); }
  int hidden(const ModuleConfig& m, int) const override { return m.params_as<TttParams>().hidden(); }
  TensorList tensors(const ModelConfig& c, const ModuleConfig& mc) const override {
    const TttParams& m = mc.params_as<TttParams>();
    const int64_t dim = c.dim, heads = m.heads(c.dim), d = m.head_dim, hidden = m.hidden();
    return {{"f.w0", {heads, d, hidden}},        {"f.w1", {heads, hidden, d}},    {"f.w2", {heads, d, hidden}},
            {"f.to_qkv.weight", {3 * dim, dim}}, {"f.c_proj.weight", {dim, dim}}, {"f.lr_fc.weight", {3 * heads, dim}},
            {"f.lr_fc.bias", {3 * heads}},       {"f.o_norm.weight", {d}}};
  }
  // The fast-weight update is a sum over tokens: across ranks the summed directions are all-reduced.
  RankExchange rank_exchange() const override { return RankExchange::Sum; }
  // The baseline's state is all three fast weights; a variant's only W1 (W0 and W2 stay the model's).
  TensorList state_tensors(const ModelConfig& c, const ModuleConfig& mc, int64_t) const override {
    const TttParams& m = mc.params_as<TttParams>();
    const int64_t heads = m.heads(c.dim), d = m.head_dim, hidden = m.hidden();
    if (m.variant.only_w1) return {{"w1", {heads, hidden, d}}};
    return {{"w0", {heads, d, hidden}}, {"w1", {heads, hidden, d}}, {"w2", {heads, d, hidden}}};
  }
  double encode_flops(const ModelConfig& c, const ModuleConfig& mc, double n, double) const override {
    const TttParams& m = mc.params_as<TttParams>();
    // Projections (q, k, v and c_proj), then per head: the update's products over the tokens and the apply.
    const double dim = c.dim, heads = m.heads(c.dim), d = m.head_dim, hidden = m.hidden();
    const double product = 2.0 * n * d * hidden;  // one token-wise product against a d x d_h weight
    const TttVariant& v = m.variant;
    // Baseline: K W0, K W2, V W1^T, then K^T gate, up^T V, K^T dhidden. V1/V2: phi(K) (2) and phi^T V.
    // straight_qk: K^T V alone (d x d).
    const double update = v.straight_qk ? 1 : v.only_w1 ? 3 : 6, apply = v.straight_qk ? 1 : 3;
    double flops = 2.0 * n * dim * 4 * dim + heads * (update + apply) * product;
    const int64_t tokens = static_cast<int64_t>(n), side = static_cast<int64_t>(hidden), dd = m.head_dim;
    const double ns = std::min(newton_schulz_dense_flops(tokens, dd, side, m.muon_update_steps),
                               newton_schulz_low_rank_flops(tokens, dd, side, m.muon_update_steps)) -
                      2.0 * n * d * hidden;  // the routes' estimates include the product itself
    const double runs = !v.muon ? 0 : v.only_w1 ? 1 : 3;
    return flops + heads * runs * std::max(0.0, ns);
  }
  double render_flops(const ModelConfig& c, const ModuleConfig& mc, double n, double) const override {
    const TttParams& m = mc.params_as<TttParams>();
    const double dim = c.dim, apply = m.variant.straight_qk ? 1 : 3;
    return 2.0 * n * dim * 2 * dim + m.heads(c.dim) * apply * (2.0 * n * m.head_dim * m.hidden());
  }
  double encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions& o, double tokens,
                               double, double) const override {
    return ttt_encode_scratch_floats(c, m.params_as<TttParams>(), o, tokens, false);
  }
  double streamed_encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions& o,
                                        double tokens, double, double) const override {
    return ttt_encode_scratch_floats(c, m.params_as<TttParams>(), o, tokens, true);
  }
  std::vector<double> render_block_floats(const ModelConfig& c, const ModuleConfig& mc, const ModelOptions& o,
                                          double tokens, double) const override {
    // core/ttt_layer.cpp: the q rows of to_qkv, q split into heads and the output o (and, where the activations are
    // not fp32, its normed copy, made after the q rows are freed: 3 of tokens x dim bound both), a token tile's
    // gate_up, and the fast weights copied where the state is stored in another type than q (stored_as: W0, W1 and
    // W2, or [W0|W2] and W1).
    const TttParams& m = mc.params_as<TttParams>();
    const double heads = m.heads(c.dim), hidden = m.hidden(), w1 = heads * hidden * m.head_dim;
    const double tile = std::min(tokens, static_cast<double>(std::max<int64_t>(1, o.token_tile)));
    std::vector<double> blocks(3, tokens * c.dim);
    if (!m.variant.straight_qk) blocks.push_back(heads * tile * 2 * hidden);
    if (m.variant.only_w1)
      blocks.insert(blocks.end(), {2 * w1, w1});
    else
      blocks.insert(blocks.end(), {w1, w1, w1});
    return blocks;
  }
  std::vector<GemmShape> gemm_shapes(const ModelConfig& c, const ModuleConfig& mc, int64_t tokens,
                                     int64_t) const override {
    const TttParams& m = mc.params_as<TttParams>();
    const int64_t h = m.head_dim, hidden = m.hidden(), heads = m.heads(c.dim);
    return {{"fast-weight apply (per head)", tokens, hidden, h, heads, true},
            {"fast-weight update (per head)", h, hidden, tokens, heads, false}};
  }
};

double ttt_encode_scratch_floats(const ModelConfig& c, const TttParams& m, const ModelOptions& o, double tokens,
                                 bool streamed) {
  const TttVariant& v = m.variant;
  const double dim = c.dim, heads = m.heads(c.dim), hd = m.head_dim, hidden = m.hidden();
  const double tile = static_cast<double>(std::max<int64_t>(1, o.token_tile)), n = std::min(tokens, tile);
  const double lr = v.only_w1 && !v.lr1 ? 0 : tokens * 3 * heads;
  const double projections = 3 * tokens * dim + lr;  // q, k, v, lr (kept through the update)
  const double project_peak = 3 * tokens * dim;      // the qkv product while splitting
  const double w1 = heads * hidden * hd;             // one W1 (or one of the three fast weights)
  const int steps = m.muon_update_steps;
  const int64_t n_tokens = static_cast<int64_t>(tokens), rows = m.head_dim, cols = m.hidden();
  // A streamed encode takes the dense route (the route is chosen on all the tokens, not a chunk's).
  const bool low_rank =
      !streamed &&
      (v.only_w1 ? v.muon && steps > 0 && ttt_low_rank_route(o.newton_schulz, n_tokens, o.token_tile, cols, rows, steps)
                 : ttt_low_rank_route(o.newton_schulz, n_tokens, o.token_tile, rows, cols, steps));
  double update = 0;
  if (!v.only_w1) {
    if (low_rank)  // directions of all tokens, then per weight: 2 grams + C + t, z, z2, next (token x token), C Q
      update = 3 * heads * tokens * hidden + w1 + 7 * heads * tokens * tokens + heads * tokens * hd;
    else  // summed directions, one tile's directions; then Newton-Schulz on the smaller side with the copy
      update = 3 * w1 +
               std::max(3 * heads * n * hidden, 2 * heads * std::min(hd, hidden) * std::min(hd, hidden) + w1 + 3 * w1);
  } else {
    const double side = v.straight_qk ? hd : hidden;
    const double features = heads * n * side * (v.straight_qk ? 1 : 2);  // phi (and the up product) of a tile
    if (low_rank)
      update = heads * tokens * side + w1 + 7 * heads * tokens * tokens + heads * tokens * hd;
    else
      update = w1 + std::max(features, (v.muon ? 2 * heads * std::min(hd, side) * std::min(hd, side) + w1 : 0) + w1);
  }
  const double tiles = v.straight_qk ? 0 : 2 * heads * n * hidden;  // the apply's gate and up tiles
  if (streamed)  // one chunk's tokens (core/ttt_module.cpp): the summed directions through the keys'
    // pass (its kv product and k, v; then the update), then the queries' pass (q, o, merged and the tiles)
    return std::max(
        {4 * tokens * dim + lr + (v.only_w1 ? 1 : 3) * w1, 2 * tokens * dim + lr + update, 3 * tokens * dim + tiles});
  // Apply: o, the gate and up tiles (not for straight_qk), then merged (the projections still alive).
  const double apply = tokens * dim + tiles + tokens * dim;
  return projections + std::max({project_peak, update, apply});
}

}  // namespace

bool ttt_low_rank_route(NewtonSchulzRoute route, int64_t tokens, int64_t token_tile, int64_t rows, int64_t cols,
                        int steps) {
  if (route != NewtonSchulzRoute::Auto) return route == NewtonSchulzRoute::LowRank;
  return steps > 0 && tokens <= token_tile &&
         newton_schulz_low_rank_flops(tokens, rows, cols, steps) < newton_schulz_dense_flops(tokens, rows, cols, steps);
}

const ModuleKind& fast_weight_ttt_kind() {
  static const FastWeightTttKind kind;
  return kind;
}

}  // namespace lact
