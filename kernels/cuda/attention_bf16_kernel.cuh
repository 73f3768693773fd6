// Fused attention on the tensor cores (bf16 operands, fp32 accumulation and softmax), for --precision bf16
// and head dims 16, 32 and 64. Per block 4 warps x 16 queries; per 64-key tile: K and V converted to bf16
// in shared memory, S = Q K^T with warp matrix products (wmma 16x16x16), the online softmax on S in fp32
// (each lane owns half a row), P rounded to bf16, P V with wmma into a scratch tile that the lanes add to
// their fp32 output rows after rescaling them. Q is scaled and rounded once, then kept in fragments.
// At 4096 tokens per view this replaces the fp32 kernel's CUDA-core FMAs, which would otherwise take most
// of a bf16 encode (the attention is about a fifth of its FLOPs).
#pragma once

#include "kernels/cuda/device_compat.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <mma.h>
#endif

namespace lact::cuda {

constexpr int kTcWarps = 4;
constexpr int kTcRows = 16;                     // queries per warp (one wmma tile)
constexpr int kTcQueries = kTcWarps * kTcRows;  // queries per block
constexpr int kTcKeys = 64;                     // keys per tile
constexpr int kTcProbLd = kTcKeys + 8;          // bf16 row stride of P (and of the staged Q): padded
constexpr int kTcScoreLd = kTcKeys + 4;         // float row stride of S (and of the P V scratch)

// One warp's part of a 64-key tile: S = Q K^T (16 x 64) into `scores`. K stored [key][dim] row-major is K^T in
// column-major.
template <int D, typename QFragment>
__device__ __forceinline__ void tile_scores(const QFragment* q_frag, const __nv_bfloat16* key_tile, float* scores) {
  namespace wmma = nvcuda::wmma;
  constexpr int kLd = D + 8;
#pragma unroll
  for (int n = 0; n < kTcKeys / 16; ++n) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag;
    wmma::fill_fragment(s_frag, 0.0f);
#pragma unroll
    for (int s = 0; s < D / 16; ++s) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> k_frag;
      wmma::load_matrix_sync(k_frag, key_tile + n * 16 * kLd + s * 16, kLd);
      wmma::mma_sync(s_frag, q_frag[s], k_frag, s_frag);
    }
    wmma::store_matrix_sync(scores + n * 16, s_frag, kTcScoreLd, wmma::mem_row_major);
  }
}

// The online softmax on this lane's half row of S (32 keys); the two halves meet through one shuffle. Writes the
// half row of P (bf16), rescales the lane's output accumulators and carries the running max and sum.
template <int D>
__device__ __forceinline__ void online_softmax_half_row(const float* srow, __nv_bfloat16* prow, int half, int tile_keys,
                                                        float* acc, float& running_max, float& running_sum) {
  float tile_max = -INFINITY;
#pragma unroll
  for (int c = 0; c < 32; ++c)
    if (half * 32 + c < tile_keys) tile_max = fmaxf(tile_max, srow[c]);
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));  // finite: key 0 is in the tile
  const float new_max = fmaxf(running_max, tile_max);
  const float correction = expf(running_max - new_max);  // 0 on the first tile
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < 32; ++c) {
    const float p = half * 32 + c < tile_keys ? expf(srow[c] - new_max) : 0.0f;
    sum += p;
    prow[c] = __float2bfloat16(p);
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  running_sum = running_sum * correction + sum;
  running_max = new_max;
#pragma unroll
  for (int c = 0; c < D / 2; ++c) acc[c] *= correction;
}

// P V (16 x D) into the scratch `out_tile` (the warp's S, which is read by now).
template <int D>
__device__ __forceinline__ void tile_values(const __nv_bfloat16* probs, const __nv_bfloat16* value_tile,
                                            float* out_tile) {
  namespace wmma = nvcuda::wmma;
  constexpr int kLd = D + 8;
#pragma unroll
  for (int n = 0; n < D / 16; ++n) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> o_frag;
    wmma::fill_fragment(o_frag, 0.0f);
#pragma unroll
    for (int s = 0; s < kTcKeys / 16; ++s) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> p_frag;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> v_frag;
      wmma::load_matrix_sync(p_frag, probs + s * 16, kTcProbLd);
      wmma::load_matrix_sync(v_frag, value_tile + s * 16 * kLd + n * 16, kLd);
      wmma::mma_sync(o_frag, p_frag, v_frag, o_frag);
    }
    wmma::store_matrix_sync(out_tile + n * 16, o_frag, kTcScoreLd, wmma::mem_row_major);
  }
}

// K and V of keys [start, start + kTcKeys) as bf16 in shared memory (zeros past the last key), by the block.
template <int D>
__device__ __forceinline__ void stage_key_value_tile(const float* kb, const float* vb, int64_t start, int tile_keys,
                                                     __nv_bfloat16* key_tile, __nv_bfloat16* value_tile) {
  constexpr int kLd = D + 8;
  for (int idx = threadIdx.x; idx < kTcKeys * D; idx += kTcWarps * 32) {
    const int r = idx / D, e = idx % D;
    const bool inside = r < tile_keys;
    key_tile[r * kLd + e] = __float2bfloat16(inside ? kb[(start + r) * D + e] : 0.0f);
    value_tile[r * kLd + e] = __float2bfloat16(inside ? vb[(start + r) * D + e] : 0.0f);
  }
}

template <int D>
__global__ void __launch_bounds__(kTcWarps * 32)
    flash_attention_bf16_kernel(const float* q, const float* k, const float* v, float* out, int64_t queries,
                                int64_t keys, float scale) {
  static_assert(D % 16 == 0 && D <= kTcKeys, "head dim must be 16, 32 or 64");
  namespace wmma = nvcuda::wmma;
  constexpr int kLd = D + 8;  // bf16 row stride of the K and V tiles
  constexpr int kSteps = D / 16;
  constexpr int kHalf = D / 2;  // output columns per lane
  LACT_SHARED(__align__(32) __nv_bfloat16, key_tile, [kTcKeys * kLd]);
  LACT_SHARED(__align__(32) __nv_bfloat16, value_tile, [kTcKeys * kLd]);
  LACT_SHARED(__align__(32) float, scores, [kTcWarps * kTcRows * kTcScoreLd]);
  LACT_SHARED(__align__(32) __nv_bfloat16, probs, [kTcWarps * kTcRows * kTcProbLd]);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t batch = blockIdx.y;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kTcQueries + warp * kTcRows;
  float* my_scores = scores + warp * kTcRows * kTcScoreLd;
  __nv_bfloat16* my_probs = probs + warp * kTcRows * kTcProbLd;

  // This warp's queries, scaled, as bf16 A fragments (staged through the P tile).
  for (int idx = lane; idx < kTcRows * D; idx += 32) {
    const int r = idx / D, e = idx % D;
    const int64_t row = first + r;
    my_probs[r * kTcProbLd + e] = __float2bfloat16(row < queries ? q[(batch * queries + row) * D + e] * scale : 0.0f);
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> q_frag[kSteps];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) wmma::load_matrix_sync(q_frag[s], my_probs + s * 16, kTcProbLd);
  __syncwarp();  // the P tile is overwritten below

  const int row = lane / 2, half = lane % 2;  // this lane's half row of S and of the output
  float acc[kHalf];
#pragma unroll
  for (int c = 0; c < kHalf; ++c) acc[c] = 0.0f;
  float running_max = -INFINITY, running_sum = 0.0f;

  for (int64_t start = 0; start < keys; start += kTcKeys) {
    const int tile_keys = static_cast<int>(keys - start < kTcKeys ? keys - start : kTcKeys);
    __syncthreads();  // every warp is done with the previous tile
    stage_key_value_tile<D>(k + batch * keys * D, v + batch * keys * D, start, tile_keys, key_tile, value_tile);
    __syncthreads();
    tile_scores<D>(q_frag, key_tile, my_scores);
    __syncwarp();
    online_softmax_half_row<D>(my_scores + row * kTcScoreLd + half * 32, my_probs + row * kTcProbLd + half * 32, half,
                               tile_keys, acc, running_max, running_sum);
    __syncwarp();  // P is complete and S is read: the scratch below reuses S
    tile_values<D>(my_probs, value_tile, my_scores);
    __syncwarp();
    const float* orow = my_scores + row * kTcScoreLd + half * kHalf;
#pragma unroll
    for (int c = 0; c < kHalf; ++c) acc[c] += orow[c];
    __syncwarp();  // the scratch is overwritten by the next tile's S
  }

  const int64_t query = first + row;
  if (query < queries) {
    const float inv = 1.0f / running_sum;
#pragma unroll
    for (int c = 0; c < kHalf; ++c) out[(batch * queries + query) * D + half * kHalf + c] = acc[c] * inv;
  }
}

}  // namespace lact::cuda
