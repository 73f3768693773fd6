// The launch side of lact's FlashAttention-2-class kernel (attention_fa2_kernel.cuh): which operands it takes, the
// grid, and the packed-qkv and split-heads layouts as operands. Templated on the launcher as cuda_ops.cuh is, and on
// the operands' storage T (float, or __nv_bfloat16: bf16 storage; O is then rounded to bf16).
#pragma once

#include <stdexcept>
#include <string>

#include "kernels/cuda/attention_fa2_kernel.cuh"

namespace lact::cuda {

constexpr int64_t kFa2MaxGrid = 65535;  // gridDim.y and gridDim.z

// The attention of queries with no keys, on every backend: each output row is a sum of no terms, 0 (the CPU's
// products of depth 0 give it, and PyTorch's scaled_dot_product_attention: its math path's softmax over no scores
// times no values). The kernels would divide their empty sums by 0, so the launches write it instead.
constexpr float kAttentionOfNoKeys = 0.0f;

// f(begin, count) over the views in chunks that fit gridDim.z.
template <typename F>
void for_fa2_view_chunks(int64_t views, F&& f) {
  for (int64_t begin = 0; begin < views; begin += kFa2MaxGrid)
    f(begin, views - begin < kFa2MaxGrid ? views - begin : kFa2MaxGrid);
}

// Whether the FlashAttention-2-class kernel takes this head dim, and these operands: cp.async copies K and V in
// 16-byte pieces, so their pointers and strides must keep every row 16-byte aligned (in bytes: 4 floats, 8 bf16);
// with bf16 storage Q is read and O written in pairs of elements, so their pointers and strides must keep every
// pair 4-byte aligned (a null pointer, not yet set, counts as aligned).
inline bool attention_fa2_supports(int d) { return d == 16 || d == 32 || d == 64 || d == 128; }
template <typename T>
bool attention_fa2_aligned(const AttentionOperandsOf<T>& ops) {
  const auto aligned = [](const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; };
  const auto rows = [](const HeadStrides& s, int64_t elements) {
    return s.view % elements == 0 && s.head % elements == 0 && s.token % elements == 0;
  };
  constexpr int64_t kPiece = 16 / static_cast<int64_t>(sizeof(T));
  const bool kv = aligned(ops.k, 16) && aligned(ops.v, 16) && rows(ops.kv_strides, kPiece);
  if (!kFa2Bf16<T>) return kv;
  return kv && aligned(ops.q, 4) && aligned(ops.out, 4) && rows(ops.q_strides, 2) && rows(ops.out_strides, 2);
}

// Out's query rows of every view-head set to kAttentionOfNoKeys, through its strides.
template <typename Launch, typename T>
void attention_fa2_of_no_keys(Launch& launch, const AttentionOperandsOf<T>& ops, int64_t views, int64_t heads,
                              int64_t queries, int d) {
  const unsigned query_blocks = static_cast<unsigned>((queries + kFa2Queries - 1) / kFa2Queries);
  for_fa2_view_chunks(views, [&](int64_t begin, int64_t count) {
    AttentionOperandsOf<T> part = ops;
    part.out += begin * ops.out_strides.view;
    launch(attention_fa2_fill_kernel<T>, dim3(query_blocks, static_cast<unsigned>(heads), static_cast<unsigned>(count)),
           dim3(kFa2Queries), part, queries, d, kAttentionOfNoKeys);
  });
}

template <int D, typename Launch, typename T>
void attention_fa2_with(Launch& launch, const AttentionOperandsOf<T>& ops, int64_t views, int64_t heads,
                        int64_t queries, int64_t keys, float scale) {
  const unsigned query_blocks = static_cast<unsigned>((queries + kFa2Queries - 1) / kFa2Queries);
  const float scale_log2 = scale * 1.4426950408889634f;  // softmax through exp2
  for_fa2_view_chunks(views, [&](int64_t begin, int64_t count) {
    AttentionOperandsOf<T> part = ops;
    part.q += begin * ops.q_strides.view;
    part.k += begin * ops.kv_strides.view;
    part.v += begin * ops.kv_strides.view;
    part.out += begin * ops.out_strides.view;
    launch(attention_fa2_kernel<D, T>, dim3(query_blocks, static_cast<unsigned>(heads), static_cast<unsigned>(count)),
           dim3(kFa2Warps * 32), part, queries, keys, scale_log2);
  });
}

// The FlashAttention-2-class kernel on operands in place (see HeadStrides): for each of `views` x `heads`,
// out = softmax(q k^T * scale) v over `queries` x `keys` tokens of head dim d (no keys: 0). Throws for a head dim or
// an alignment it does not take (attention_fa2_supports, attention_fa2_aligned); heads <= 65535.
template <typename Launch, typename T>
void attention_fa2(Launch& launch, const AttentionOperandsOf<T>& ops, int64_t views, int64_t heads, int64_t queries,
                   int64_t keys, int d, float scale) {
  if (views == 0 || heads == 0 || queries == 0) return;
  if (keys == 0 && heads <= kFa2MaxGrid) return attention_fa2_of_no_keys(launch, ops, views, heads, queries, d);
  if (!attention_fa2_supports(d) || !attention_fa2_aligned(ops) || heads > kFa2MaxGrid)
    throw std::invalid_argument("attention_fa2: head dim " + std::to_string(d) +
                                " not 16, 32, 64 or 128, or K/V rows not 16-byte aligned (bf16: or Q/O pairs not "
                                "4-byte aligned), or over 65535 heads");
  if (d == 16) return attention_fa2_with<16>(launch, ops, views, heads, queries, keys, scale);
  if (d == 32) return attention_fa2_with<32>(launch, ops, views, heads, queries, keys, scale);
  if (d == 64) return attention_fa2_with<64>(launch, ops, views, heads, queries, keys, scale);
  attention_fa2_with<128>(launch, ops, views, heads, queries, keys, scale);
}

// The attention of the packed qkv projection output, read in place: qkv [views, tokens, width] holds head h's q, k
// and v at columns q_col + h d, k_col + h d, v_col + h d; head h's output goes to columns out_col + h d of out
// [views, tokens, out_width]. No split_heads or merge_heads. T (float or __nv_bfloat16) from the pointers.
template <typename Launch, typename T>
void attention_packed(Launch& launch, const T* qkv, int64_t width, int64_t q_col, int64_t k_col, int64_t v_col, T* out,
                      int64_t out_width, int64_t out_col, int64_t views, int64_t tokens, int64_t heads, int d,
                      float scale) {
  AttentionOperandsOf<T> ops;
  ops.q = qkv + q_col, ops.k = qkv + k_col, ops.v = qkv + v_col, ops.out = out + out_col;
  ops.q_strides = ops.kv_strides = {tokens * width, d, width};
  ops.out_strides = {tokens * out_width, d, out_width};
  attention_fa2(launch, ops, views, heads, tokens, tokens, d, scale);
}

// The split-heads layout of the Backend::attention op ([batch, tokens, d], contiguous) as operands.
template <typename T>
AttentionOperandsOf<T> split_head_operands(const T* q, const T* k, const T* v, T* out, int64_t queries, int64_t keys,
                                           int d) {
  AttentionOperandsOf<T> ops;
  ops.q = q, ops.k = k, ops.v = v, ops.out = out;
  ops.q_strides = {queries * d, 0, d};
  ops.kv_strides = {keys * d, 0, d};
  ops.out_strides = {queries * d, 0, d};
  return ops;
}

}  // namespace lact::cuda
