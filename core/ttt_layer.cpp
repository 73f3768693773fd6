// The large-chunk TTT layer (FastWeightGluMLPMultihead): SwiGLU fast weights updated once with all
// input tokens (Muon-style Newton-Schulz on the summed descent directions, then a per-column weight
// norm back to the initial norms), then applied to the queries. See lact_nvs_spec.md section 4.
#include <algorithm>
#include <cmath>

#include "core/layers.h"
#include "kernels/newton_schulz.h"

namespace lact {

namespace {

constexpr float kQkL2Eps = 1e-5f;        // q / (||q|| + eps)
constexpr float kNoNorm = -1.0f;         // split_heads_silu's eps for v: no L2 norm
constexpr float kOutputNormEps = 1e-5f;  // o_norm RMSNorm

// softplus^-1, so that softplus(0 + inverse_softplus(base_lr)) = base_lr.
double inverse_softplus(double x) { return x + std::log(-std::expm1(-x)); }

// out += c_proj(o_norm(o)) for o [tokens, heads * D], the heads already merged (each head's products wrote its
// columns): the norm's groups of D are the (token, head) rows and it writes what the projection reads, in the
// activation type (bf16 on CUDA at bf16, as merge_heads used to round it).
void finish_apply(Backend& be, const TttWeights& w, Tensor& o, Tensor& out) {
  const int64_t d = w.o_norm.numel();
  Tensor normed = be.activation_type() == o.dtype() ? o : be.empty(o.shape(), be.activation_type());
  be.rms_norm(o, w.o_norm, d, kOutputNormEps, normed);
  linear_add(be, normed, w.out_proj, out);
}

// Rows [begin, ...) of head h of o [tokens, heads * d] as the batched products write them: head h is batch entry h.
TttOperand merged_rows(const Tensor& o, int64_t heads, int64_t begin) {
  const int64_t width = o.dim(1);
  return {&o, begin * width, width, width / heads};
}

}  // namespace

FastWeights initial_fast_weights(const TttWeights& w) { return {w.w02, w.w1}; }

void unpack_w02(Backend& be, const Tensor& w02, Tensor& w0, Tensor& w2) {
  const int64_t batch = w02.dim(0), rows = w02.dim(1), cols = w02.dim(2) / 2;
  w0 = be.empty({batch, rows, cols});
  w2 = be.empty({batch, rows, cols});
  unpack_w02_into(be, w02, w0, w2);
}

void unpack_w02_into(Backend& be, const Tensor& w02, const Tensor& w0, const Tensor& w2) {
  const int64_t batch = w02.dim(0), rows = w02.dim(1), cols = w02.dim(2) / 2;
  be.copy_blocks(w0.data(), cols, w02.data(), 2 * cols, cols, batch * rows);
  be.copy_blocks(w2.data(), cols, w02.data() + cols, 2 * cols, cols, batch * rows);
}

Tensor pack_w02(Backend& be, const Tensor& w0, const Tensor& w2) {
  const int64_t batch = w0.dim(0), rows = w0.dim(1), cols = w0.dim(2);
  Tensor w02 = be.empty({batch, rows, 2 * cols});
  be.copy_blocks(w02.data(), 2 * cols, w0.data(), cols, cols, batch * rows);
  be.copy_blocks(w02.data() + cols, 2 * cols, w2.data(), cols, cols, batch * rows);
  return w02;
}

namespace {

// The per-token learning rates of y into p.lr, where the variant reads them.
void project_learning_rates(Backend& be, const TttParams& config, const TttWeights& w, const Tensor& y,
                            TttProjections& p) {
  if (config.variant.only_w1 && !config.variant.lr1) return;  // the learned rates are never read
  const int64_t heads = y.dim(1) / config.head_dim;
  p.lr = be.empty({y.dim(0), 3 * heads});
  linear(be, y, w.lr_weight, p.lr);
  be.add_bias(p.lr, w.lr_bias);
  be.softplus(p.lr, static_cast<float>(inverse_softplus(config.base_lr)));
}

}  // namespace

DType ttt_head_type(const Backend& be, const TttParams& config) {
  return config.variant.only_w1 ? DType::F32 : be.activation_type();
}

TttProjections float32_heads(Backend& be, const TttProjections& p) {
  TttProjections f = p;
  for (Tensor* t : {&f.q, &f.k, &f.v})
    if (!t->empty()) *t = stored_as(be, *t, DType::F32);
  return f;
}

TttProjections ttt_project(Backend& be, const TttParams& config, const TttWeights& w, const Tensor& y, bool with_keys) {
  const int64_t tokens = y.dim(0), dim = y.dim(1), head_dim = config.head_dim, heads = dim / head_dim;
  TttProjections p;
  // Render needs only q: the first dim rows of to_qkv.
  const Tensor projection = with_keys ? w.qkv : w.qkv.slice(0, dim);
  const int64_t width = projection.dim(0);
  Tensor qkv = be.empty({tokens, width}, be.activation_type());  // bf16 on CUDA at bf16
  linear(be, y, projection, qkv);
  // SiLU on q, k and v alike, each split into its heads (ttt_head_type) in the same pass, q and k L2-normalised.
  const Tensor rows = qkv.reshape({1, tokens, width});
  p.q = be.empty({heads, tokens, head_dim}, ttt_head_type(be, config));
  be.split_heads_silu(rows, 0, heads, head_dim, kQkL2Eps, p.q);
  if (!with_keys) return p;
  p.k = be.empty(p.q.shape(), p.q.dtype());
  p.v = be.empty(p.q.shape(), p.q.dtype());
  be.split_heads_silu(rows, dim, heads, head_dim, kQkL2Eps, p.k);
  be.split_heads_silu(rows, 2 * dim, heads, head_dim, kNoNorm, p.v);
  project_learning_rates(be, config, w, y, p);
  return p;
}

TttProjections ttt_project_keys(Backend& be, const TttParams& config, const TttWeights& w, const Tensor& y) {
  const int64_t tokens = y.dim(0), dim = y.dim(1), head_dim = config.head_dim, heads = dim / head_dim;
  TttProjections p;
  Tensor kv = be.empty({tokens, 2 * dim}, be.activation_type());  // rows dim..3 dim of to_qkv: k and v
  linear(be, y, w.qkv.slice(dim, 3 * dim), kv);
  const Tensor rows = kv.reshape({1, tokens, 2 * dim});
  p.k = be.empty({heads, tokens, head_dim}, ttt_head_type(be, config));
  p.v = be.empty(p.k.shape(), p.k.dtype());
  be.split_heads_silu(rows, 0, heads, head_dim, kQkL2Eps, p.k);
  be.split_heads_silu(rows, dim, heads, head_dim, kNoNorm, p.v);
  project_learning_rates(be, config, w, y, p);
  return p;
}

namespace {

// The token-wise part of the update for tokens [begin, end): the inner forward and backward of the
// SwiGLU fast weight on the keys, with the per-token learning rates folded into the row scaling.
// gate_up [heads, n, 2 d_h] = K [W0|W2] (one product), then [lr0 dL/dgate | lr2 dL/dup]; hidden [heads, n, d_h] =
// V W1^T, then lr1 * hidden: so that [dW0|dW2] = K^T gate_up and dW1 = hidden^T V ((diag(lr) K)^T X =
// K^T (diag(lr) X)).
struct Directions {
  Tensor gate_up, hidden;
};

Directions token_directions(Backend& be, const FastWeights& initial, const TttProjections& p, int64_t begin,
                            int64_t end) {
  const int64_t heads = p.k.dim(0), d = p.k.dim(2), hidden = initial.w1.dim(1), n = end - begin;
  const DType type = p.k.dtype();  // bf16 heads: bf16 products, bf16 directions (the update's sums stay float32)
  const Tensor w02 = stored_as(be, initial.w02, type), w1 = stored_as(be, initial.w1, type);
  Directions r{be.empty({heads, n, 2 * hidden}, type), be.empty({heads, n, hidden}, type)};
  ttt_product(be, false, false, n, 2 * hidden, d, 1.0f, rows_of(p.k, begin), all_of(w02), 0.0f, all_of(r.gate_up),
              heads);
  ttt_product(be, false, true, n, hidden, d, 1.0f, rows_of(p.v, begin), all_of(w1), 0.0f, all_of(r.hidden), heads);
  // lr_j of head h at token t: lr[t*3H + j*H + h], applied in the same pass (issue 51 item 4)
  const float* lr = p.lr.data() + begin * 3 * heads;
  be.swiglu_backward_packed(r.gate_up, r.hidden, lr, heads, 1, 3 * heads);
  return r;
}

void restore_norms(Backend& be, const TttWeights& w, FastWeights& fast) {
  be.restore_column_norms(fast.w02, w.w02_norms, kWeightNormEps);  // per column: W0's and W2's alike
  be.restore_column_norms(fast.w1, w.w1_norms, kWeightNormEps);
}

}  // namespace

void ttt_accumulate_directions(Backend& be, const FastWeights& initial, const TttProjections& p, int64_t begin,
                               int64_t end, FastWeights& dw) {
  const int64_t heads = p.k.dim(0), d = p.k.dim(2), hidden = initial.w1.dim(1), n = end - begin;
  if (n <= 0) return;
  const Directions r = token_directions(be, initial, p, begin, end);
  ttt_product(be, true, false, d, 2 * hidden, n, 1.0f, rows_of(p.k, begin), all_of(r.gate_up), 1.0f, all_of(dw.w02),
              heads);
  ttt_product(be, true, false, hidden, d, n, 1.0f, all_of(r.hidden), rows_of(p.v, begin), 1.0f, all_of(dw.w1), heads);
}

FastWeights ttt_finish_update(Backend& be, const TttParams& config, const TttWeights& w, const FastWeights& initial,
                              FastWeights& dw) {
  const int steps = config.muon_update_steps;
  // Newton-Schulz per matrix. dW0 and dW2 (one shape) out of the packed sum as one batch [dW0 of each head | dW2 of
  // each head], so one call runs both: half the launches, twice the output tiles a product (a GPU's 768 x 768
  // Gram products fill a quarter of its SMs). The packed sum's memory goes back before it runs.
  const int64_t heads = dw.w02.dim(0);
  Tensor both = be.empty({2 * heads, dw.w02.dim(1), dw.w02.dim(2) / 2});
  unpack_w02_into(be, dw.w02, both.slice(0, heads), both.slice(heads, 2 * heads));
  dw.w02 = Tensor();
  newton_schulz5(be, both, steps);
  newton_schulz5(be, dw.w1, steps);
  FastWeights updated{pack_w02(be, both.slice(0, heads), both.slice(heads, 2 * heads)), be.empty(initial.w1.shape())};
  both = Tensor();
  be.add(updated.w02, initial.w02);  // NS(dW) + W: the same floats as W + NS(dW)
  be.copy(updated.w1, initial.w1);
  be.add(updated.w1, dw.w1);
  restore_norms(be, w, updated);
  return updated;
}

FastWeights ttt_update(Backend& be, const TttParams& config, const TttWeights& w, const TttProjections& projections,
                       NewtonSchulzRoute route, int64_t token_tile, Collective* collective) {
  const FastWeights initial = initial_fast_weights(w);
  const TttProjections& p = projections;
  const int64_t local = p.k.dim(1), d = p.k.dim(2), hidden = initial.w1.dim(1);
  const int64_t tokens = sum_over_ranks(collective, local);  // the route is every rank's choice alike
  const int steps = config.muon_update_steps;
  const bool low_rank = ttt_low_rank_route(route, tokens, token_tile, d, hidden, steps);

  if (!low_rank) {
    FastWeights dw{be.zeros(initial.w02.shape()), be.zeros(initial.w1.shape())};
    for (int64_t begin = 0; begin < local; begin += token_tile)
      ttt_accumulate_directions(be, initial, p, begin, std::min(local, begin + token_tile), dw);
    if (collective)  // one sum over ranks per direction; Newton-Schulz then runs on the same total everywhere
      for (Tensor* delta : {&dw.w02, &dw.w1}) collective->all_reduce_sum(be, *delta);
    return ttt_finish_update(be, config, w, initial, dw);
  }

  // Low rank: every direction is P^T Q over the N tokens; Newton-Schulz runs on N x N matrices. Across ranks
  // the factors (N <= one token tile) are gathered, so every rank computes what one process would. The factors are
  // float32 (a few tokens: bf16 heads are widened first).
  const TttProjections p32 = float32_heads(be, projections);
  Directions r = token_directions(be, initial, p32, 0, local);
  Tensor dgate, dup, w0, w2;
  unpack_w02(be, r.gate_up, dgate, dup);  // each factor alone, and only as long as it is needed
  r.gate_up = Tensor();
  const Tensor k = gather_token_rows(be, collective, p32.k), v = gather_token_rows(be, collective, p32.v);
  unpack_w02(be, initial.w02, w0, w2);
  FastWeights updated{Tensor(), be.empty(initial.w1.shape())};
  be.copy(updated.w1, initial.w1);
  newton_schulz5_low_rank_add(be, k, gather_token_rows(be, collective, dgate), steps, w0);  // K^T dgate
  dgate = Tensor();
  newton_schulz5_low_rank_add(be, gather_token_rows(be, collective, r.hidden), v, steps, updated.w1);  // hidden^T V
  r.hidden = Tensor();
  newton_schulz5_low_rank_add(be, k, gather_token_rows(be, collective, dup), steps, w2);
  dup = Tensor();
  updated.w02 = pack_w02(be, w0, w2);
  restore_norms(be, w, updated);
  return updated;
}

namespace {

// The apply over tiles of q's tokens: `first(n, begin, gate_up)` writes [q W0 | q W2] for the n query rows from
// `begin` into gate_up [heads, n, 2 d_h]; then silu(gate) * up goes into gate's columns, read by the W1 product
// with row stride 2 d_h. gate_up has q's storage (bf16 products on bf16 heads), o is float32 (its RMSNorm) and
// written merged, [tokens, heads * d] (finish_apply).
template <typename FirstProduct>
void apply_tiles(Backend& be, const TttParams& config, const TttWeights& w, const Tensor& fast_w1, const Tensor& q,
                 int64_t token_tile, Tensor& out, const FirstProduct& first) {
  const int64_t heads = q.dim(0), tokens = q.dim(1), d = q.dim(2);
  const Tensor w1 = stored_as(be, fast_w1, q.dtype());
  Tensor o = be.empty({tokens, heads * d});
  if (config.variant.straight_qk) {  // phi is the identity: o = q W1
    ttt_product(be, false, false, tokens, d, d, 1.0f, all_of(q), all_of(w1), 0.0f, merged_rows(o, heads, 0), heads);
    finish_apply(be, w, o, out);
    return;
  }
  const int64_t hidden = w1.dim(1), width = 2 * hidden;
  const int64_t tile = std::max<int64_t>(1, std::min(token_tile, tokens));
  Tensor gate_up = be.empty({heads, tile, width}, q.dtype());
  for (int64_t begin = 0; begin < tokens; begin += tile) {
    const int64_t n = std::min(tile, tokens - begin);
    Tensor gu = gate_up.reshape({heads * tile, width}).slice(0, heads * n).reshape({heads, n, width});
    first(n, begin, gu);
    be.swiglu_packed(gu);
    ttt_product(be, false, false, n, d, hidden, 1.0f, {&gu, 0, width, n * width}, all_of(w1), 0.0f,
                merged_rows(o, heads, begin), heads);
  }
  finish_apply(be, w, o, out);
}

}  // namespace

void ttt_apply(Backend& be, const TttParams& config, const TttWeights& w, const FastWeights& fast, const Tensor& q,
               int64_t token_tile, Tensor& out) {
  const int64_t heads = q.dim(0), d = q.dim(2), width = fast.w02.dim(2);
  const Tensor w02 = config.variant.straight_qk ? Tensor() : stored_as(be, fast.w02, q.dtype());
  apply_tiles(be, config, w, fast.w1, q, token_tile, out, [&](int64_t n, int64_t begin, Tensor& gate_up) {
    ttt_product(be, false, false, n, width, d, 1.0f, rows_of(q, begin), all_of(w02), 0.0f, all_of(gate_up), heads);
  });
}

void ttt_apply_state(Backend& be, const TttParams& config, const TttWeights& w, const Tensor& w0, const Tensor& w1,
                     const Tensor& w2, const Tensor& q, int64_t token_tile, Tensor& out) {
  const int64_t heads = q.dim(0), d = q.dim(2), hidden = w1.dim(1), width = 2 * hidden;
  const Tensor w0q = stored_as(be, w0, q.dtype()), w2q = stored_as(be, w2, q.dtype());
  apply_tiles(be, config, w, w1, q, token_tile, out, [&](int64_t n, int64_t begin, Tensor& gate_up) {
    const TttOperand gate{&gate_up, 0, width, n * width}, up{&gate_up, hidden, width, n * width};
    ttt_product(be, false, false, n, hidden, d, 1.0f, rows_of(q, begin), all_of(w0q), 0.0f, gate, heads);
    ttt_product(be, false, false, n, hidden, d, 1.0f, rows_of(q, begin), all_of(w2q), 0.0f, up, heads);
  });
}

}  // namespace lact
