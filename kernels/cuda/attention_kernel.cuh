// Fused softmax attention (flash-attention style): out[b] = softmax(q[b] k[b]^T * scale) v[b] without
// ever writing the score matrix. One thread per query row holds q and its output accumulator in registers;
// the block streams tiles of kKeys keys and values through shared memory (every thread reads the same key
// element at once: a broadcast, no bank conflicts) and keeps a running max and sum (online softmax), so
// a 4096-token view costs one pass over K and V per 128 queries.
// D is the largest head dim the instantiation handles (registers are sized by it); the real dim d <= D is
// a runtime value, elements past it are zero.
#pragma once

#include "kernels/cuda/device_compat.h"

namespace lact::cuda {

constexpr int kAttentionQueries = 128;  // queries (threads) per block

template <int D>
struct AttentionTile {
  static constexpr int kKeys = D <= 64 ? 32 : 16;  // keys per shared-memory tile: bounds the score registers
};

template <int D>
__global__ void __launch_bounds__(kAttentionQueries)
    flash_attention_kernel(const float* q, const float* k, const float* v, float* out, int64_t queries, int64_t keys,
                           int d, float scale) {
  constexpr int kKeys = AttentionTile<D>::kKeys;
  LACT_SHARED(float, key_tile, [kKeys][D]);
  LACT_SHARED(float, value_tile, [kKeys][D]);
  const int64_t batch = blockIdx.y;
  const int64_t query = static_cast<int64_t>(blockIdx.x) * kAttentionQueries + threadIdx.x;
  const bool active = query < queries;
  const float* kb = k + batch * keys * d;
  const float* vb = v + batch * keys * d;

  float qr[D], acc[D];
#pragma unroll
  for (int e = 0; e < D; ++e) {
    qr[e] = active && e < d ? q[(batch * queries + query) * d + e] * scale : 0.0f;
    acc[e] = 0.0f;
  }
  float running_max = -INFINITY, running_sum = 0.0f;

  for (int64_t start = 0; start < keys; start += kKeys) {
    const int64_t tile_keys = keys - start < kKeys ? keys - start : kKeys;
    for (int idx = threadIdx.x; idx < kKeys * D; idx += kAttentionQueries) {
      const int r = idx / D, e = idx % D;
      const bool inside = r < tile_keys && e < d;
      key_tile[r][e] = inside ? kb[(start + r) * d + e] : 0.0f;
      value_tile[r][e] = inside ? vb[(start + r) * d + e] : 0.0f;
    }
    __syncthreads();

    float scores[kKeys];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      float dot = 0.0f;
#pragma unroll
      for (int e = 0; e < D; ++e) dot += qr[e] * key_tile[j][e];
      scores[j] = j < tile_keys ? dot : -INFINITY;
      tile_max = fmaxf(tile_max, scores[j]);
    }
    // tile_max is finite (the tile has at least one key), so exp() below never sees inf - inf.
    const float new_max = fmaxf(running_max, tile_max);
    const float correction = expf(running_max - new_max);  // 0 on the first tile
    running_sum *= correction;
#pragma unroll
    for (int e = 0; e < D; ++e) acc[e] *= correction;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      const float p = expf(scores[j] - new_max);  // 0 for keys past the end
      running_sum += p;
#pragma unroll
      for (int e = 0; e < D; ++e) acc[e] += p * value_tile[j][e];
    }
    running_max = new_max;
    __syncthreads();  // the tiles are overwritten next
  }

  if (active) {
    const float inv = 1.0f / running_sum;
#pragma unroll
    for (int e = 0; e < D; ++e)  // constant indices keep acc in registers
      if (e < d) out[(batch * queries + query) * d + e] = acc[e] * inv;
  }
}

}  // namespace lact::cuda
