#include <cfloat>
#include <cmath>

#include "core/layers.h"

namespace lact {

namespace {
// nn.RMSNorm(head_dim) with eps=None uses torch.finfo(float32).eps.
constexpr float kQkNormEps = FLT_EPSILON;
}  // namespace

void window_attention(Backend& be, const ModuleConfig& config, const ModuleWeights& w, const Tensor& y,
                      int64_t views, Tensor& out) {
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
