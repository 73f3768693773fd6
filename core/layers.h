// The block modules' layers, each written once against the Backend ops, with each kind's own weights. Inputs
// are the module's LayerNorm'd input y [tokens, dim]; each layer adds its output into `out`, the residual stream's
// rows (its output projection does, beta 1: no separate add pass and no output buffer).
#pragma once

#include <cfloat>

#include "core/block_module.h"
#include "core/config.h"
#include "core/kinds/attention_kind.h"
#include "core/kinds/mlp_kind.h"
#include "core/kinds/ttt_kind.h"
#include "core/model_options.h"
#include "core/weights.h"
#include "kernels/backend.h"

namespace lact {

// The QK RMSNorms: nn.RMSNorm(head_dim) with eps=None uses torch.finfo(float32).eps.
inline constexpr float kQkNormEps = FLT_EPSILON;
// The fast weights' per-column weight norm: W / (||W||_col + eps) * ||W0||_col.
inline constexpr float kWeightNormEps = 1e-5f;

// ---- the attention kinds (per-view window attention, the full-attention baseline)

struct AttentionWeights : KindWeights {
  Tensor qkv;             // f.to_qkv.weight [3 dim, dim]
  Tensor out_proj;        // f.c_proj.weight [dim, dim]
  Tensor q_norm, k_norm;  // the QK RMSNorms [head_dim] (use_qk_norm)
};
std::shared_ptr<const KindWeights> load_attention(const AttentionParams& p,
                                                  const std::function<Tensor(const std::string&)>& get);

// Per-view window attention: `views` consecutive groups of tokens attend only within themselves.
void window_attention(Backend& be, const AttentionParams& config, const AttentionWeights& weights, const Tensor& y,
                      int64_t views, Tensor& out);

// ---- the full-attention baseline (GlobalAttention)

// The keys and values of the input tokens, per layer: the baseline's scene state.
struct KvCache {
  Tensor k, v;  // [heads, input tokens, head_dim], k after its RMSNorm
};

// Encode: every input token attends to every input token (every rank's, across ranks); returns the cache.
KvCache global_attention_encode(Backend& be, const AttentionParams& config, const AttentionWeights& weights,
                                const Tensor& y, Tensor& out, Collective* collective = nullptr);
// Render: each of `views` target views attends to the cached input tokens and to its own tokens.
void global_attention_render(Backend& be, const AttentionParams& config, const AttentionWeights& weights,
                             const KvCache& cache, const Tensor& y, int64_t views, Tensor& out);

// ---- the MLP

struct MlpWeights : KindWeights {
  Tensor fc;        // f.c_fc.weight [hidden, dim]
  Tensor out_proj;  // f.c_proj.weight [dim, hidden]
};

// c_proj(GELU(c_fc(y))).
void mlp(Backend& be, const MlpWeights& weights, const Tensor& y, Tensor& out);

// ---- the large-chunk TTT layer

struct TttWeights : KindWeights {
  Tensor qkv;       // f.to_qkv.weight [3 dim, dim]
  Tensor out_proj;  // f.c_proj.weight [dim, dim]
  // The initial fast weights: W0 and W2 (f.w0, f.w2, each [heads, D, d_h]) side by side, [heads, D, 2 d_h] with W0
  // in columns [0, d_h), so that one product K [W0|W2] applies both (issue 51 item 4); W1 [heads, d_h, D].
  Tensor w02, w1;
  Tensor lr_weight, lr_bias;  // lr_fc [3 heads, dim], [3 heads]
  Tensor o_norm;              // per-head RMSNorm [D]
  // Column norms of the initial fast weights (the weight-norm targets): [heads, 2 d_h] for [W0|W2], [heads, D].
  Tensor w02_norms, w1_norms;
};

// The fast weights, W0 and W2 side by side as in TttWeights: w02 [heads, D, 2 d_h], w1 [heads, d_h, D]. The
// update's summed directions take the same form ([dW0|dW2] from one product K^T [dgate|dup]).
struct FastWeights {
  Tensor w02, w1;
};
// W0 and W2 as the separate tensors [heads, D, d_h] a state file holds, and back.
void unpack_w02(Backend& be, const Tensor& w02, Tensor& w0, Tensor& w2);
// The same into tensors of that shape the caller made (slices of one, say).
void unpack_w02_into(Backend& be, const Tensor& w02, const Tensor& w0, const Tensor& w2);
Tensor pack_w02(Backend& be, const Tensor& w0, const Tensor& w2);

// Per-head projections of y: q (and k, v, per-token learning rates when `with_keys`).
struct TttProjections {
  Tensor q, k, v;  // [heads, tokens, D]; q and k L2-normalised; of ttt_head_type's storage
  Tensor lr;       // [tokens, 3 heads], channel (lrs h): lr_j of head h at column j*heads + h
};
TttProjections ttt_project(Backend& be, const TttParams& config, const TttWeights& weights, const Tensor& y,
                           bool with_keys);
// The heads' storage: the backend's activation type where the update is ttt_accumulate_directions' (bf16 on CUDA at
// bf16, as the official code's autocast leaves k and v), float32 for the variants' W1-only updates.
DType ttt_head_type(const Backend& be, const TttParams& config);
// p with float32 heads (p itself when they are): for the low-rank route, whose factors stay float32.
TttProjections float32_heads(Backend& be, const TttProjections& p);
// k, v and the learning rates only (q left empty): what the update reads, for an encode that projects the
// queries in a second pass (core/ttt_module.cpp's streamed encode).
TttProjections ttt_project_keys(Backend& be, const TttParams& config, const TttWeights& weights, const Tensor& y);

// The update directions summed over tokens [begin, end) and added to dW: the part of the update that
// splits over token tiles, views or processes. dW starts at zero.
void ttt_accumulate_directions(Backend& be, const FastWeights& initial, const TttProjections& p, int64_t begin,
                               int64_t end, FastWeights& directions);
// W' = weight_norm(W + NS(dW)) from the summed directions, which it uses up (NS in place; the packed w02 released).
FastWeights ttt_finish_update(Backend& be, const TttParams& config, const TttWeights& weights,
                              const FastWeights& initial, FastWeights& directions);

// The whole update with every token of p (tiles of `token_tile`, or the low-rank Newton-Schulz route
// when cheaper and allowed).
// Across ranks (`collective` non-null, p holding this rank's tokens): the summed directions are all-reduced,
// or, on the low-rank route (decided on every rank's tokens together), its factors gathered.
FastWeights ttt_update(Backend& be, const TttParams& config, const TttWeights& weights, const TttProjections& p,
                       NewtonSchulzRoute route, int64_t token_tile, Collective* collective = nullptr);

// ---- shared by the TTT update paths (core/ttt_layer.cpp, core/ttt_w1_update.cpp)

// Rows [begin, ...) of every batch entry of t [batch, rows, cols], and all of it, as GEMM operands.
inline MatrixOperand rows_from(const Tensor& t, int64_t begin) {
  return {t.data() + begin * t.dim(2), t.dim(2), t.dim(1) * t.dim(2)};
}
inline MatrixOperand whole(const Tensor& t) { return {t.data(), t.dim(2), t.dim(1) * t.dim(2)}; }
// Columns [first, first + cols) of every batch entry of t [batch, rows, width], as a GEMM operand (W0 or W2 of a
// packed [W0|W2]).
inline MatrixOperand column_block(const Tensor& t, int64_t first) {
  return {t.data() + first, t.dim(2), t.dim(1) * t.dim(2)};
}

// A product operand that knows its storage (core/ttt_products.cpp): elements from `offset` on of *t, row stride
// ld, batch stride `stride`. The heads are bf16 on the CUDA backend at bf16 (ttt_head_type), float32 elsewhere.
struct TttOperand {
  const Tensor* t;
  int64_t offset, ld, stride;
};
TttOperand rows_of(const Tensor& t, int64_t begin);  // rows [begin, ...) of t [batch, rows, cols]
TttOperand all_of(const Tensor& t);
// C = alpha op(A) op(B) + beta C batched (Backend::gemm's convention) on A and B of one storage type: gemm for
// float32 ones and C, gemm_bf16 otherwise (C float32 or bf16).
void ttt_product(Backend& be, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                 TttOperand a, TttOperand b, float beta, TttOperand c, int64_t batch);
// t itself when it has storage `type`, else a copy of that type (the fast weights the bf16 products read).
Tensor stored_as(Backend& be, const Tensor& t, DType type);

// (ttt_low_rank_route, the choice of the Newton-Schulz route, is the kind's: core/kinds/ttt_kind.h.)

// ---- the W1-only updates of the linear-attention variants (V1-V6; core/ttt_w1_update.cpp)

// phi(K) of tokens [begin, end) with the rows scaled by lr1 when the variant has it: [heads, n, d_h or D].
Tensor ttt_key_features(Backend& be, const TttParams& config, const TttWeights& weights, const TttProjections& p,
                        int64_t begin, int64_t end);
// dW1 += phi(K)^T diag(eta) V over tokens [begin, end): the part that splits over tiles, views, processes.
void ttt_accumulate_w1(Backend& be, const TttParams& config, const TttWeights& weights, const TttProjections& p,
                       int64_t begin, int64_t end, Tensor& dw1);
// W1' = [weight_norm](W1 + [NS](dW1)) from the summed dW1 (which it overwrites).
Tensor ttt_finish_w1(Backend& be, const TttParams& config, const TttWeights& weights, Tensor& dw1);
// The whole update with every token of p, in the form options.ttt_update_form names.
// Across ranks as ttt_update.
Tensor ttt_update_w1(Backend& be, const TttParams& config, const TttWeights& weights, const TttProjections& p,
                     const ModelOptions& options, Collective* collective = nullptr);

// out += c_proj(o_norm(phi(q) W1)) for every token of q, each head's rows written into its columns (merged),
// phi(q) = silu(q W0) * (q W2) (or q for straight_qk).
void ttt_apply(Backend& be, const TttParams& config, const TttWeights& weights, const FastWeights& fast,
               const Tensor& q, int64_t token_tile, Tensor& out);
// The same with W0 and W2 apart, as a state holds them (the render): two products write the one packed [gate | up],
// so no per-call copy of the weights is made and a backend's converted copies of the state's tensors stay in use.
void ttt_apply_state(Backend& be, const TttParams& config, const TttWeights& weights, const Tensor& w0,
                     const Tensor& w1, const Tensor& w2, const Tensor& q, int64_t token_tile, Tensor& out);

// The initial fast weights of a TTT module (shared tensors, not copies).
FastWeights initial_fast_weights(const TttWeights& weights);

}  // namespace lact
