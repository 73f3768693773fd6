// lact's own FlashAttention-2-class attention (bf16 operands on the tensor cores, fp32 accumulation and softmax),
// the default own kernel for --precision bf16 at head dims 16, 32, 64 and 128 (design and prediction:
// kernels/cuda/NOTES.md). One block = 8 warps x 16 queries = 128 queries of one view-head; the warps share
// each key tile. Per tile, all in registers: S = Q K^T (mma.sync m16n8k16), the online softmax (running max and
// sum, exp2 with the scale folded in), P packed to bf16 straight from S's accumulator layout into A fragments,
// O += P V. K and V tiles are double-buffered in shared memory through cp.async: tile j + 1 is in flight while
// tile j is multiplied. The operands are read in place through strides, so Q, K and V can be column ranges of
// the packed qkv projection output and O a column range of [tokens, dim] (no head split or merge).
#pragma once

#include <cmath>

#include "kernels/cuda/device_compat.h"
#include "kernels/cuda/mma_primitives.cuh"

namespace lact::cuda {

// Element (view, head, token, e) of an operand is at data[view * view + head * head + token * token + e].
struct HeadStrides {
  int64_t view = 0, head = 0, token = 0;
};
struct AttentionOperands {
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  float* out = nullptr;
  HeadStrides q_strides, kv_strides, out_strides;  // k and v share theirs
};

constexpr int kFa2Warps = 8;
constexpr int kFa2Queries = kFa2Warps * 16;  // queries per block
// Keys per tile: two stages of K and V (fp32) within the 48 KB of static shared memory.
template <int D>
constexpr int kFa2TileKeys = D <= 32   ? 64
                             : D <= 64 ? 32
                                       : 16;
// Row strides (floats) of the K and V tiles, padded so the fragment reads below hit 32 distinct banks.
template <int D>
constexpr int kFa2KeyLd = D + 8;
template <int D>
constexpr int kFa2ValueLd = D + 4;

// This warp's 16 queries as bf16 A fragments, one per 16 dims (rows past `queries` are zeros).
template <int D>
__device__ __forceinline__ void fa2_load_queries(const float* qb, int64_t token_stride, int64_t row0, int64_t queries,
                                                 uint32_t (&qf)[D / 16][4]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + group + 8 * r;
    const float* p = row < queries ? qb + row * token_stride : nullptr;
#pragma unroll
    for (int s = 0; s < D / 16; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = s * 16 + h * 8 + quad * 2;
        qf[s][r + 2 * h] = p ? pack_bf16x2(p[col], p[col + 1]) : 0u;
      }
  }
}

// Queues the copies of keys [start, start + KT) of K and V into one stage (zeros past `keys`), by the block.
template <int D, int KT>
__device__ __forceinline__ void fa2_copy_tile(const float* kb, const float* vb, int64_t token_stride, int64_t start,
                                              int64_t keys, float* key_tile, float* value_tile) {
  constexpr int kChunks = D / 4;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < KT * kChunks; i += kFa2Warps * 32) {
    const int r = i / kChunks, c = (i % kChunks) * 4;
    const bool inside = start + r < keys;
    const int64_t offset = inside ? (start + r) * token_stride + c : 0;
    cp_async_16(key_tile + r * kFa2KeyLd<D> + c, kb + offset, inside);
    cp_async_16(value_tile + r * kFa2ValueLd<D> + c, vb + offset, inside);
  }
}

// S = Q K^T for this warp's 16 queries and the tile's KT keys: s[n] is keys [8n, 8n + 8) in the C layout.
template <int D, int KT>
__device__ __forceinline__ void fa2_tile_scores(const uint32_t (&qf)[D / 16][4], const float* key_tile,
                                                float (&s)[KT / 8][4]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int n = 0; n < KT / 8; ++n) {
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    const float* krow = key_tile + (n * 8 + group) * kFa2KeyLd<D> + quad * 2;  // B[k][n] = K[key n][dim k]
#pragma unroll
    for (int st = 0; st < D / 16; ++st) {
      const float2 lo = *reinterpret_cast<const float2*>(krow + st * 16);
      const float2 hi = *reinterpret_cast<const float2*>(krow + st * 16 + 8);
      const uint32_t b[2] = {pack_bf16x2(lo.x, lo.y), pack_bf16x2(hi.x, hi.y)};
      mma_bf16_16x8x16(s[n], qf[st], b);
    }
  }
}

// The online softmax over one tile: S scaled to log2 units, keys past `tile_keys` masked, the running max of
// this lane's two rows (group, group + 8) updated across the quad, O and the partial sums rescaled, and S
// replaced by P = exp2(S - max). Each lane's running sum covers only its own columns until the end.
template <int D, int KT>
__device__ __forceinline__ void fa2_online_softmax(float (&s)[KT / 8][4], int tile_keys, float scale_log2,
                                                   float (&row_max)[2], float (&row_sum)[2], float (&o)[D / 8][4]) {
  const int quad = threadIdx.x % 4;
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < KT / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float x = n * 8 + quad * 2 + c % 2 < tile_keys ? s[n][c] * scale_log2 : -INFINITY;
      s[n][c] = x;
      tile_max[c / 2] = fmaxf(tile_max[c / 2], x);
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float m = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));  // finite: key 0 of the tile is inside
    const float new_max = fmaxf(row_max[r], m);
    const float correction = exp2f(row_max[r] - new_max);  // 0 on the first tile
    row_max[r] = new_max;
    row_sum[r] *= correction;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o[n][2 * r] *= correction, o[n][2 * r + 1] *= correction;
  }
#pragma unroll
  for (int n = 0; n < KT / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      s[n][c] = exp2f(s[n][c] - row_max[c / 2]);
      row_sum[c / 2] += s[n][c];
    }
}

// O += P V: P's accumulator layout for keys [16k, 16k + 16) is the A fragment of step k, so P never leaves the
// registers.
template <int D, int KT>
__device__ __forceinline__ void fa2_tile_values(const float (&p)[KT / 8][4], const float* value_tile,
                                                float (&o)[D / 8][4]) {
  constexpr int kLd = kFa2ValueLd<D>;
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int kk = 0; kk < KT / 16; ++kk) {
    const uint32_t a[4] = {pack_bf16x2(p[2 * kk][0], p[2 * kk][1]), pack_bf16x2(p[2 * kk][2], p[2 * kk][3]),
                           pack_bf16x2(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                           pack_bf16x2(p[2 * kk + 1][2], p[2 * kk + 1][3])};
    const float* v0 = value_tile + (kk * 16 + quad * 2) * kLd + group;  // B[k][n] = V[key k][dim n]
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const uint32_t b[2] = {pack_bf16x2(v0[n * 8], v0[kLd + n * 8]),
                             pack_bf16x2(v0[8 * kLd + n * 8], v0[9 * kLd + n * 8])};
      mma_bf16_16x8x16(o[n], a, b);
    }
  }
}

// O / sum for this lane's two rows (the sums completed across the quad), rows past `queries` not written.
template <int D>
__device__ __forceinline__ void fa2_store(float* ob, int64_t token_stride, int64_t row0, int64_t queries,
                                          const float (&o)[D / 8][4], float (&row_sum)[2]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    const int64_t row = row0 + group + 8 * r;
    if (row >= queries) continue;
    const float inv = 1.0f / row_sum[r];
    float* orow = ob + row * token_stride + quad * 2;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) orow[n * 8] = o[n][2 * r] * inv, orow[n * 8 + 1] = o[n][2 * r + 1] * inv;
  }
}

// grid (query blocks, heads, views), kFa2Warps * 32 threads. scale_log2 = scale * log2(e).
template <int D>
__global__ void __launch_bounds__(kFa2Warps * 32)
    attention_fa2_kernel(AttentionOperands ops, int64_t queries, int64_t keys, float scale_log2) {
  static_assert(D % 16 == 0 && D <= 128, "head dim 16, 32, 64 or 128");
  constexpr int KT = kFa2TileKeys<D>;
  __shared__ __align__(16) float key_tiles[2][KT * kFa2KeyLd<D>];
  __shared__ __align__(16) float value_tiles[2][KT * kFa2ValueLd<D>];

  const int64_t head = blockIdx.y, view = blockIdx.z;
  const float* qb = ops.q + view * ops.q_strides.view + head * ops.q_strides.head;
  const float* kb = ops.k + view * ops.kv_strides.view + head * ops.kv_strides.head;
  const float* vb = ops.v + view * ops.kv_strides.view + head * ops.kv_strides.head;
  float* ob = ops.out + view * ops.out_strides.view + head * ops.out_strides.head;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kFa2Queries + (threadIdx.x / 32) * 16;

  uint32_t qf[D / 16][4];
  fa2_load_queries<D>(qb, ops.q_strides.token, row0, queries, qf);
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};

  const int64_t tiles = (keys + KT - 1) / KT;
  fa2_copy_tile<D, KT>(kb, vb, ops.kv_strides.token, 0, keys, key_tiles[0], value_tiles[0]);
  cp_async_commit();
  for (int64_t j = 0; j < tiles; ++j) {
    const int stage = static_cast<int>(j % 2);
    if (j + 1 < tiles)  // the other stage was released by the __syncthreads that ended tile j - 1
      fa2_copy_tile<D, KT>(kb, vb, ops.kv_strides.token, (j + 1) * KT, keys, key_tiles[1 - stage],
                           value_tiles[1 - stage]);
    cp_async_commit();   // an empty group on the last tile keeps the count uniform
    cp_async_wait<1>();  // tile j has landed (this thread's copies) ...
    __syncthreads();     // ... and every thread's
    float s[KT / 8][4];
    fa2_tile_scores<D, KT>(qf, key_tiles[stage], s);
    const int tile_keys = static_cast<int>(keys - j * KT < KT ? keys - j * KT : KT);
    fa2_online_softmax<D, KT>(s, tile_keys, scale_log2, row_max, row_sum, o);
    fa2_tile_values<D, KT>(s, value_tiles[stage], o);
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  fa2_store<D>(ob, ops.out_strides.token, row0, queries, o, row_sum);
}

}  // namespace lact::cuda
