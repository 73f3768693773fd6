// lact's own FlashAttention-2-class attention (bf16 operands on the tensor cores, fp32 accumulation and softmax),
// the default own kernel for --precision bf16 at head dims 16, 32, 64 and 128 (design and prediction:
// kernels/cuda/NOTES.md). One block = 8 warps x 16 queries = 128 queries of one view-head; the warps share
// each key tile. Per tile, all in registers: S = Q K^T (mma.sync m16n8k16), the online softmax (running max and
// sum, exp2 with the scale folded in), P packed to bf16 straight from S's accumulator layout into A fragments,
// O += P V. K and V tiles are double-buffered in shared memory through cp.async: tile j + 1 is in flight while
// tile j is multiplied. The operands are read in place through strides, so Q, K and V can be column ranges of
// the packed qkv projection output and O a column range of [tokens, dim] (no head split or merge).
// The operands are stored as T: float, converted to bf16 fragments in registers, or __nv_bfloat16 (bf16 storage),
// whose K/V tiles take half the shared memory (twice the keys a tile), whose Q fragments are the stored bf16 pairs as
// they are, whose K and V fragments come from the tiles through ldmatrix.x4 (V's with .trans), two mma.sync products'
// B fragments per instruction, and whose O is rounded to bf16 (nearest even) on store.
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/device_compat.h"
#include "kernels/cuda/mma_primitives.cuh"

namespace lact::cuda {

// Element (view, head, token, e) of an operand is at data[view * view + head * head + token * token + e].
struct HeadStrides {
  int64_t view = 0, head = 0, token = 0;
};
template <typename T>
struct AttentionOperandsOf {
  const T *q = nullptr, *k = nullptr, *v = nullptr;
  T* out = nullptr;
  HeadStrides q_strides, kv_strides, out_strides;  // k and v share theirs
};
using AttentionOperands = AttentionOperandsOf<float>;

constexpr int kFa2Warps = 8;
constexpr int kFa2Queries = kFa2Warps * 16;  // queries per block
template <typename T>
constexpr bool kFa2Bf16 = std::is_same_v<T, __nv_bfloat16>;
// Keys per tile: two stages of K and V within the 48 KB of static shared memory (fp32: 64/32/16 keys at d <= 32/64/
// 128; bf16: 64/64/32).
template <int D, typename T = float>
constexpr int kFa2TileKeys = D <= 32 ? 64 : (kFa2Bf16<T> ? 2 : 1) * (D <= 64 ? 32 : 16);
// Row strides (elements) of the K and V tiles, padded so the fragment reads below hit 32 distinct banks (bf16: 16
// bytes of padding, so rows stay 16-byte aligned for cp.async and ldmatrix, and the 8 rows an ldmatrix reads at once
// fall on 8 distinct 4-bank groups).
template <int D, typename T = float>
constexpr int kFa2KeyLd = D + 8;
template <int D, typename T = float>
constexpr int kFa2ValueLd = kFa2Bf16<T> ? D + 8 : D + 4;

// The raw bits of stored bf16: two adjacent elements as one register (the lower one in the low half), and a register
// stored as two adjacent elements. Plain loads and stores on the GPU; memcpy in the emulation.
__device__ __forceinline__ uint32_t fa2_load_pair(const __nv_bfloat16* p) {
#if defined(__CUDACC__)
  return *reinterpret_cast<const uint32_t*>(p);
#else
  uint32_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return bits;
#endif
}
__device__ __forceinline__ void fa2_store_pair(__nv_bfloat16* p, float lo, float hi) {
  const uint32_t bits = pack_bf16x2(lo, hi);
#if defined(__CUDACC__)
  *reinterpret_cast<uint32_t*>(p) = bits;
#else
  std::memcpy(static_cast<void*>(p), &bits, sizeof bits);
#endif
}
__device__ __forceinline__ void fa2_store_pair(float* p, float lo, float hi) { p[0] = lo, p[1] = hi; }

// A fragment register of two adjacent elements of a row (Q from global memory, K from its float tile), and of the
// same element of two rows (V from its float tile).
__device__ __forceinline__ uint32_t fa2_query_pair(const float* p) { return pack_bf16x2(p[0], p[1]); }
__device__ __forceinline__ uint32_t fa2_query_pair(const __nv_bfloat16* p) { return fa2_load_pair(p); }
__device__ __forceinline__ uint32_t fa2_key_pair(const float* p) {
  const float2 x = *reinterpret_cast<const float2*>(p);
  return pack_bf16x2(x.x, x.y);
}
__device__ __forceinline__ uint32_t fa2_value_pair(const float& lo, const float& hi) { return pack_bf16x2(lo, hi); }

// This warp's 16 queries as bf16 A fragments, one per 16 dims (rows past `queries` are zeros).
template <int D, typename T>
__device__ __forceinline__ void fa2_load_queries(const T* qb, int64_t token_stride, int64_t row0, int64_t queries,
                                                 uint32_t (&qf)[D / 16][4]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + group + 8 * r;
    const T* p = row < queries ? qb + row * token_stride : nullptr;
#pragma unroll
    for (int s = 0; s < D / 16; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = s * 16 + h * 8 + quad * 2;
        qf[s][r + 2 * h] = p ? fa2_query_pair(p + col) : 0u;
      }
  }
}

// Queues the copies of keys [start, start + KT) of K and V into one stage (zeros past `keys`), by the block.
template <int D, int KT, typename T>
__device__ __forceinline__ void fa2_copy_tile(const T* kb, const T* vb, int64_t token_stride, int64_t start,
                                              int64_t keys, T* key_tile, T* value_tile) {
  constexpr int kPiece = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte copy
  constexpr int kChunks = D / kPiece;                       // copies per row
  for (int i = threadIdx.x; i < KT * kChunks; i += kFa2Warps * 32) {
    const int r = i / kChunks, c = (i % kChunks) * kPiece;
    const bool inside = start + r < keys;
    const int64_t offset = inside ? (start + r) * token_stride + c : 0;
    cp_async_16(key_tile + r * kFa2KeyLd<D, T> + c, kb + offset, inside);
    cp_async_16(value_tile + r * kFa2ValueLd<D, T> + c, vb + offset, inside);
  }
}

// bf16 storage: S = Q K^T with the B fragments of two key groups per ldmatrix.x4 (matrices: keys [16 n2, 16 n2 + 8)
// and [16 n2 + 8, 16 n2 + 16), each at dims [16 st, 16 st + 8) and [16 st + 8, 16 st + 16)); each s[n] still takes
// its dim steps in order, so the sums are those of the per-element loads.
template <int D, int KT>
__device__ __forceinline__ void fa2_tile_scores_ldmatrix(const uint32_t (&qf)[D / 16][4], const __nv_bfloat16* key_tile,
                                                         float (&s)[KT / 8][4]) {
  const int lane = threadIdx.x % 32;
  // This lane's row: row lane % 8 of matrix lane / 8 (keys + 8 for matrices 2 and 3, dims + 8 for 1 and 3).
  const __nv_bfloat16* row = key_tile + (lane / 16 * 8 + lane % 8) * kFa2KeyLd<D, __nv_bfloat16> + lane / 8 % 2 * 8;
#pragma unroll
  for (int n2 = 0; n2 < KT / 16; ++n2) {
    float(&s0)[4] = s[2 * n2];
    float(&s1)[4] = s[2 * n2 + 1];
    s0[0] = s0[1] = s0[2] = s0[3] = s1[0] = s1[1] = s1[2] = s1[3] = 0.0f;
#pragma unroll
    for (int st = 0; st < D / 16; ++st) {
      uint32_t r[4];
      ldmatrix_x4(r, row + n2 * 16 * kFa2KeyLd<D, __nv_bfloat16> + st * 16);
      const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      mma_bf16_16x8x16(s0, qf[st], b0);
      mma_bf16_16x8x16(s1, qf[st], b1);
    }
  }
}

// S = Q K^T for this warp's 16 queries and the tile's KT keys: s[n] is keys [8n, 8n + 8) in the C layout.
template <int D, int KT, typename T>
__device__ __forceinline__ void fa2_tile_scores(const uint32_t (&qf)[D / 16][4], const T* key_tile,
                                                float (&s)[KT / 8][4]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int n = 0; n < KT / 8; ++n) {
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    const T* krow = key_tile + (n * 8 + group) * kFa2KeyLd<D, T> + quad * 2;  // B[k][n] = K[key n][dim k]
#pragma unroll
    for (int st = 0; st < D / 16; ++st) {
      const uint32_t b[2] = {fa2_key_pair(krow + st * 16), fa2_key_pair(krow + st * 16 + 8)};
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

// P's accumulator layout for keys [16 kk, 16 kk + 16) as the A fragment of step kk.
template <int KT>
__device__ __forceinline__ void fa2_probability_fragment(const float (&p)[KT / 8][4], int kk, uint32_t (&a)[4]) {
  a[0] = pack_bf16x2(p[2 * kk][0], p[2 * kk][1]), a[1] = pack_bf16x2(p[2 * kk][2], p[2 * kk][3]);
  a[2] = pack_bf16x2(p[2 * kk + 1][0], p[2 * kk + 1][1]), a[3] = pack_bf16x2(p[2 * kk + 1][2], p[2 * kk + 1][3]);
}

// bf16 storage: O += P V with the B fragments of two dim groups per ldmatrix.x4.trans (matrices: keys [16 kk,
// 16 kk + 8) and [16 kk + 8, 16 kk + 16), each at dims [8 n, 8 n + 8) and [8 n + 8, 8 n + 16)); each o[n] still takes
// its key steps in order.
template <int D, int KT>
__device__ __forceinline__ void fa2_tile_values_ldmatrix(const float (&p)[KT / 8][4], const __nv_bfloat16* value_tile,
                                                         float (&o)[D / 8][4]) {
  constexpr int kLd = kFa2ValueLd<D, __nv_bfloat16>;
  const int lane = threadIdx.x % 32;
  // This lane's row: row lane % 8 of matrix lane / 8 (keys + 8 for matrices 1 and 3, dims + 8 for 2 and 3).
  const __nv_bfloat16* row = value_tile + (lane / 8 % 2 * 8 + lane % 8) * kLd + lane / 16 * 8;
#pragma unroll
  for (int kk = 0; kk < KT / 16; ++kk) {
    uint32_t a[4];
    fa2_probability_fragment<KT>(p, kk, a);
#pragma unroll
    for (int n = 0; n < D / 8; n += 2) {
      uint32_t r[4];
      ldmatrix_x4_trans(r, row + kk * 16 * kLd + n * 8);
      const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      mma_bf16_16x8x16(o[n], a, b0);
      mma_bf16_16x8x16(o[n + 1], a, b1);
    }
  }
}

// O += P V: P's accumulator layout for keys [16k, 16k + 16) is the A fragment of step k, so P never leaves the
// registers.
template <int D, int KT, typename T>
__device__ __forceinline__ void fa2_tile_values(const float (&p)[KT / 8][4], const T* value_tile,
                                                float (&o)[D / 8][4]) {
  constexpr int kLd = kFa2ValueLd<D, T>;
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int kk = 0; kk < KT / 16; ++kk) {
    const uint32_t a[4] = {pack_bf16x2(p[2 * kk][0], p[2 * kk][1]), pack_bf16x2(p[2 * kk][2], p[2 * kk][3]),
                           pack_bf16x2(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                           pack_bf16x2(p[2 * kk + 1][2], p[2 * kk + 1][3])};
    const T* v0 = value_tile + (kk * 16 + quad * 2) * kLd + group;  // B[k][n] = V[key k][dim n]
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const uint32_t b[2] = {fa2_value_pair(v0[n * 8], v0[kLd + n * 8]),
                             fa2_value_pair(v0[8 * kLd + n * 8], v0[9 * kLd + n * 8])};
      mma_bf16_16x8x16(o[n], a, b);
    }
  }
}

// O / sum for this lane's two rows (the sums completed across the quad), rows past `queries` not written.
template <int D, typename T>
__device__ __forceinline__ void fa2_store(T* ob, int64_t token_stride, int64_t row0, int64_t queries,
                                          const float (&o)[D / 8][4], float (&row_sum)[2]) {
  const int lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    const int64_t row = row0 + group + 8 * r;
    if (row >= queries) continue;
    const float inv = 1.0f / row_sum[r];
    T* orow = ob + row * token_stride + quad * 2;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) fa2_store_pair(orow + n * 8, o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
  }
}

// Blocks per SM the kernel is compiled for (at most 128 registers a thread for 2): 2 for bf16 storage at head dim 64,
// which the ldmatrix loads would otherwise take past 128 (one block of 8 warps per SM); else 0, none asked, so the
// float kernels compile as they did before ldmatrix (kernels/cuda/NOTES.md has the register counts).
template <int D, typename T>
constexpr int kFa2MinBlocks = (kFa2Bf16<T> && D == 64) ? 2 : 0;

// grid (query blocks, heads, views), kFa2Warps * 32 threads. scale_log2 = scale * log2(e).
template <int D, typename T = float>
__global__ void __launch_bounds__(kFa2Warps * 32, kFa2MinBlocks<D, T>)
    attention_fa2_kernel(AttentionOperandsOf<T> ops, int64_t queries, int64_t keys, float scale_log2) {
  static_assert(D % 16 == 0 && D <= 128, "head dim 16, 32, 64 or 128");
  static_assert(std::is_same_v<T, float> || kFa2Bf16<T>, "float or bf16 storage");
  constexpr int KT = kFa2TileKeys<D, T>;
  static_assert(!kFa2Bf16<T> || (kFa2KeyLd<D, T> % 8 == 0 && kFa2ValueLd<D, T> % 8 == 0 && KT % 16 == 0),
                "ldmatrix reads 16-byte aligned rows (8 bf16), two key groups at a time");
  LACT_SHARED(__align__(16) T, key_tiles, [2][KT * kFa2KeyLd<D, T>]);
  LACT_SHARED(__align__(16) T, value_tiles, [2][KT * kFa2ValueLd<D, T>]);

  const int64_t head = blockIdx.y, view = blockIdx.z;
  const T* qb = ops.q + view * ops.q_strides.view + head * ops.q_strides.head;
  const T* kb = ops.k + view * ops.kv_strides.view + head * ops.kv_strides.head;
  const T* vb = ops.v + view * ops.kv_strides.view + head * ops.kv_strides.head;
  T* ob = ops.out + view * ops.out_strides.view + head * ops.out_strides.head;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kFa2Queries + (threadIdx.x / 32) * 16;

  uint32_t qf[D / 16][4];
  fa2_load_queries<D, T>(qb, ops.q_strides.token, row0, queries, qf);
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};

  const int64_t tiles = (keys + KT - 1) / KT;
  fa2_copy_tile<D, KT, T>(kb, vb, ops.kv_strides.token, 0, keys, key_tiles[0], value_tiles[0]);
  cp_async_commit();
  for (int64_t j = 0; j < tiles; ++j) {
    const int stage = static_cast<int>(j % 2);
    if (j + 1 < tiles)  // the other stage was released by the __syncthreads that ended tile j - 1
      fa2_copy_tile<D, KT, T>(kb, vb, ops.kv_strides.token, (j + 1) * KT, keys, key_tiles[1 - stage],
                              value_tiles[1 - stage]);
    cp_async_commit();   // an empty group on the last tile keeps the count uniform
    cp_async_wait<1>();  // tile j has landed (this thread's copies) ...
    __syncthreads();     // ... and every thread's
    float s[KT / 8][4];
    if constexpr (kFa2Bf16<T>)
      fa2_tile_scores_ldmatrix<D, KT>(qf, key_tiles[stage], s);
    else
      fa2_tile_scores<D, KT, T>(qf, key_tiles[stage], s);
    const int tile_keys = static_cast<int>(keys - j * KT < KT ? keys - j * KT : KT);
    fa2_online_softmax<D, KT>(s, tile_keys, scale_log2, row_max, row_sum, o);
    if constexpr (kFa2Bf16<T>)
      fa2_tile_values_ldmatrix<D, KT>(s, value_tiles[stage], o);
    else
      fa2_tile_values<D, KT, T>(s, value_tiles[stage], o);
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  fa2_store<D, T>(ob, ops.out_strides.token, row0, queries, o, row_sum);
}

// The output of queries with no keys (attention_fa2_of_no_keys): `value` in each of a view-head's query rows through
// out's strides; the attention's grid (query blocks, heads, views), one thread a row.
template <typename T>
__global__ void attention_fa2_fill_kernel(AttentionOperandsOf<T> ops, int64_t queries, int d, float value) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= queries) return;
  const HeadStrides& s = ops.out_strides;
  T* out = ops.out + blockIdx.z * s.view + blockIdx.y * s.head + row * s.token;
  for (int e = 0; e < d; ++e) store_float(out + e, value);
}

}  // namespace lact::cuda
