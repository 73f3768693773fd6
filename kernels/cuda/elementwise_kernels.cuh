// Elementwise and layout kernels: one grid-stride loop per op. Each mirrors a CpuBackend op exactly
// (same formula, same order of operations where it matters) so the two agree to float32 rounding.
#pragma once

#include "kernels/cuda/device_compat.h"
#include "kernels/ray_tokens.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

namespace lact::cuda {

#define LACT_GRID_STRIDE(i, n)                                                           \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

__device__ __forceinline__ float silu_of(float x) { return x / (1.0f + expf(-x)); }

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, float value) {
  LACT_GRID_STRIDE(i, n) store_float(p + i, value);
}

__global__ void add_kernel(float* y, const float* x, int64_t n) { LACT_GRID_STRIDE(i, n) y[i] += x[i]; }

__global__ void axpby_kernel(float* y, float a, const float* x, float b, int64_t n) {
  LACT_GRID_STRIDE(i, n) y[i] = a * x[i] + b * y[i];
}

// y = [batch, n, n]; i runs over batch * n diagonal entries.
__global__ void add_scaled_identity_kernel(float* y, int64_t n, int64_t diagonal_entries, float a) {
  LACT_GRID_STRIDE(i, diagonal_entries) {
    const int64_t b = i / n, r = i % n;
    y[(b * n + r) * n + r] += a;
  }
}

enum class Activation { Silu, Gelu, Sigmoid, Softplus };

// In float whatever the storage T (float, or bf16 rounded on the store).
template <Activation A, typename T>
__global__ void activation_kernel(T* p, int64_t n, float shift) {
  LACT_GRID_STRIDE(i, n) {
    const float x = load_float(p + i);
    float y = x;
    if (A == Activation::Silu) y = silu_of(x);
    if (A == Activation::Gelu) y = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    if (A == Activation::Sigmoid) y = 1.0f / (1.0f + expf(-x));
    if (A == Activation::Softplus) {
      const float v = x + shift;
      y = v > 20.0f ? v : log1pf(expf(v));  // PyTorch's threshold 20
    }
    store_float(p + i, y);
  }
}

__global__ void add_bias_kernel(float* x, const float* bias, int64_t n, int64_t cols) {
  LACT_GRID_STRIDE(i, n) x[i] += bias[i % cols];
}

// x = [batch, rows, cols]; x[b, r, :] *= scale[b * batch_stride + r * row_stride].
__global__ void scale_rows_kernel(float* x, const float* scale, int64_t rows, int64_t cols, int64_t n,
                                  int64_t batch_stride, int64_t row_stride) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t row = i / cols, b = row / rows, r = row % rows;
    x[i] *= scale[b * batch_stride + r * row_stride];
  }
}

// x[b, :] *= scale[b], `per` elements per batch entry.
__global__ void scale_batched_kernel(float* x, const float* scale, int64_t per, int64_t n) {
  LACT_GRID_STRIDE(i, n) x[i] *= scale[i / per];
}

__global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  LACT_GRID_STRIDE(i, n) out[i] = silu_of(gate[i]) * up[i];
}

// See Backend::swiglu_backward: gate <- dL/dgate, up <- hidden, dhidden <- dL/dup.
__global__ void swiglu_backward_kernel(float* gate, float* up, float* dhidden, int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const float g = gate[i], u = up[i], d = dhidden[i];
    const float sig = 1.0f / (1.0f + expf(-g));
    const float act = g * sig;
    gate[i] = d * u * sig * (1.0f + g * (1.0f - sig));
    up[i] = act * u;
    dhidden[i] = d * act;
  }
}

// swiglu_backward_kernel on the packed product of [W0|W2] with scale_rows folded in (Backend::swiglu_backward_packed):
// gate_up [batch, rows, 2 cols] = [gate | up], dhidden [batch, rows, cols]; i runs over dhidden. Row (b, r) reads
// its scales at scale[b * batch_stride + r * row_stride] (s0), part_stride further (s1), 2 part_stride (s2); out:
// gate <- s0 dL/dgate, up's columns <- s2 dL/dup, dhidden <- s1 hidden. The same products, in the same order, as
// swiglu_backward_kernel and then scale_rows_kernel on each output.
template <typename T>
__global__ void swiglu_backward_packed_kernel(T* gate_up, T* dhidden, const float* scale, int64_t rows, int64_t cols,
                                              int64_t n, int64_t part_stride, int64_t batch_stride,
                                              int64_t row_stride) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t row = i / cols, at = row * 2 * cols + i % cols;
    const float* s = scale + row / rows * batch_stride + row % rows * row_stride;
    const float g = load_float(gate_up + at), u = load_float(gate_up + at + cols), d = load_float(dhidden + i);
    const float sig = 1.0f / (1.0f + expf(-g));
    const float act = g * sig;
    const float dgate = d * u * sig * (1.0f + g * (1.0f - sig)), hidden = act * u, dup = d * act;
    store_float(gate_up + at, dgate * s[0]);
    store_float(gate_up + at + cols, dup * s[2 * part_stride]);
    store_float(dhidden + i, hidden * s[part_stride]);
  }
}

// swiglu_kernel on the packed product: gate_up [rows, 2 cols]; gate's columns <- silu(gate) * up. i runs over
// [rows, cols].
template <typename T>
__global__ void swiglu_packed_kernel(T* gate_up, int64_t cols, int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t at = i / cols * 2 * cols + i % cols;
    store_float(gate_up + at, silu_of(load_float(gate_up + at)) * load_float(gate_up + at + cols));
  }
}

// src [views, tokens, width] columns [offset, offset + heads*head_dim) -> dst [views, heads, tokens, head_dim];
// i runs over dst.
// Either side float or bf16 (a bf16 projection output split into float heads, float heads merged into bf16 rows).
template <typename Src, typename Dst>
__global__ void split_heads_kernel(const Src* src, Dst* dst, int64_t tokens, int64_t width, int64_t offset,
                                   int64_t heads, int64_t head_dim, int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t e = i % head_dim, t = (i / head_dim) % tokens, vh = i / (head_dim * tokens);
    const int64_t h = vh % heads, v = vh / heads;
    store_float(dst + i, load_float(src + (v * tokens + t) * width + offset + h * head_dim + e));
  }
}

// src [views, heads, tokens, head_dim] -> dst [views, tokens, heads*head_dim]; i runs over dst.
template <typename Src, typename Dst>
__global__ void merge_heads_kernel(const Src* src, Dst* dst, int64_t heads, int64_t tokens, int64_t head_dim,
                                   int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t e = i % head_dim, h = (i / head_dim) % heads, vt = i / (head_dim * heads);
    const int64_t t = vt % tokens, v = vt / tokens;
    store_float(dst + i, load_float(src + ((v * heads + h) * tokens + t) * head_dim + e));
  }
}

// The k = 0 product: C = beta * C, and 0 where beta = 0 (NaN in C included), as CpuBackend defines it.
// C = [batch] matrices of m x n with row stride ldc and batch stride stride_c.
template <typename T>
__global__ void scale_matrix_kernel(T* c, int64_t m, int64_t cols, int64_t ldc, int64_t stride_c, float beta,
                                    int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t col = i % cols, r = (i / cols) % m, b = i / (cols * m);
    T* v = c + b * stride_c + r * ldc + col;
    store_float(v, beta == 0.0f ? 0.0f : beta * load_float(v));
  }
}

// Split-K's sum (gemm_plan.h): c[b, r, col] = the sum over the slices of partial[slice, b, r, col], in slice order,
// plus beta * c (beta 0: c's old contents ignored, NaN included); partial [slices, batch, m, cols] contiguous.
__global__ void sum_slices_kernel(const float* partial, int64_t slices, float* c, int64_t m, int64_t cols, int64_t ldc,
                                  int64_t stride_c, float beta, int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const int64_t col = i % cols, r = (i / cols) % m, b = i / (cols * m);
    float sum = partial[i];
    for (int64_t s = 1; s < slices; ++s) sum += partial[s * n + i];
    float& v = c[b * stride_c + r * ldc + col];
    v = beta == 0.0f ? sum : sum + beta * v;
  }
}

// One thread per pixel of views x height x width: its 12 token channels (kernels/ray_tokens.h).
__global__ void ray_tokens_kernel(const RayPose* poses, const float* images, float* tokens, int height, int width,
                                  int patch, int64_t n) {
  LACT_GRID_STRIDE(i, n) {
    const int u = static_cast<int>(i % width), v = static_cast<int>((i / width) % height);
    const int64_t view = i / (static_cast<int64_t>(width) * height);
    ray_token_channels(poses[view], u, v, images ? images + i * 3 : nullptr,
                       tokens + ray_token_offset(view, u, v, height, width, patch));
  }
}

// fp32 <-> bf16 around a library that computes on bf16 operands (cuDNN's fused attention): the tensors stay fp32
// between ops, so its inputs are rounded (to nearest even, as the tensor-core kernels round theirs) into a staging
// buffer and its bf16 output is widened back (exactly).
__global__ void to_bf16_kernel(const float* src, __nv_bfloat16* dst, int64_t n) {
  LACT_GRID_STRIDE(i, n) dst[i] = __float2bfloat16(src[i]);
}

__global__ void from_bf16_kernel(const __nv_bfloat16* src, float* dst, int64_t n) {
  LACT_GRID_STRIDE(i, n) dst[i] = __bfloat162float(src[i]);
}

#undef LACT_GRID_STRIDE

}  // namespace lact::cuda
