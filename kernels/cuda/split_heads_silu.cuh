// The TTT layer's heads in one pass (Backend::split_heads_silu, issue 51 item 4): SiLU, split_heads and the L2 norm
// of each head's row, one kernel where three ran. Written against l2_normalize_kernel (kernels/cuda/
// reduction_kernels.cuh): one warp per row, the same lanes' partial sums and shuffles, so that the results are those
// of silu, split_heads and l2_normalize bit for bit.
#pragma once

#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/device_compat.h"
#include "kernels/cuda/elementwise_kernels.cuh"
#include "kernels/cuda/reduction_kernels.cuh"

namespace lact::cuda {

// v as stored in a T (bf16: rounded to nearest even) and read back as float.
template <typename T>
__device__ __forceinline__ float as_stored(float v) {
  T t;
  store_float(&t, v);
  return load_float(&t);
}

// The TTT layer's heads in one pass (Backend::split_heads_silu): one warp per dst row g (first + the warp's row;
// g = (view * heads + head) * tokens + token), SiLU of src's head_dim columns rounded to Src's type and then Dst's
// (what silu in place and split_heads store), then, where eps >= 0, l2_normalize_kernel's sums on those values.
template <typename Src, typename Dst>
__global__ void split_heads_silu_kernel(const Src* src, Dst* dst, int64_t first, int64_t rows, int64_t tokens,
                                        int64_t width, int64_t offset, int64_t heads, int64_t head_dim, float eps) {
  const int64_t r = warp_row();
  const int lane = threadIdx.x % kWarp;
  const bool active = r < rows;
  const int64_t g = first + (active ? r : 0), t = g % tokens, h = g / tokens % heads, v = g / tokens / heads;
  const Src* s = src + (v * tokens + t) * width + offset + h * head_dim;
  Dst* d = dst + g * head_dim;
  float squares = 0.0f;
  if (active)
    for (int64_t i = lane; i < head_dim; i += kWarp) {
      const float x = as_stored<Dst>(as_stored<Src>(silu_of(load_float(s + i))));
      store_float(d + i, x);
      squares += x * x;
    }
  if (eps < 0.0f) return;  // the same for every lane: none is left waiting at the shuffles
  const float inv = 1.0f / (sqrtf(warp_sum(squares)) + eps);
  if (active)
    for (int64_t i = lane; i < head_dim; i += kWarp) store_float(d + i, load_float(d + i) * inv);
}

// src [views, tokens, width] -> dst [views, heads, tokens, head_dim] (see split_heads_silu_kernel).
template <typename Launch, typename Src, typename Dst>
void split_heads_silu(Launch& launch, const Src* src, Dst* dst, int64_t views, int64_t tokens, int64_t width,
                      int64_t offset, int64_t heads, int64_t head_dim, float eps) {
  for_chunks(views * heads * tokens, kRowsPerLaunch, [&](int64_t begin, int64_t count) {
    launch(split_heads_silu_kernel<Src, Dst>, row_blocks(count), dim3(kRowsPerBlock * kWarp), src, dst, begin, count,
           tokens, width, offset, heads, head_dim, eps);
  });
}

}  // namespace lact::cuda
