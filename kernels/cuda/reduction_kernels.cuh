// Row reductions (norms) and the reductions of the fast-weight update (Frobenius dots, column norms).
// Row ops give one warp to a row: lanes stride over its columns, shuffles sum the partial sums. Every lane
// of a warp reaches the shuffles (inactive rows compute on nothing and skip the stores): a full-mask
// shuffle needs all 32 lanes.
#pragma once

#include "kernels/cuda/device_compat.h"

namespace lact::cuda {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;  // warps per block for the row kernels (256 threads)

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ int64_t warp_row() {
  return static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
}

// LayerNorm without bias: y = (x - mean) / sqrt(var + eps) * weight, rows of `cols`; y may alias x (float32 y).
// Two passes over the row (mean, then centred variance) as CpuBackend does, in float; y stored as its type T.
template <typename T>
__global__ void layer_norm_kernel(const float* x, const float* weight, T* y, int64_t rows, int64_t cols, float eps) {
  const int64_t row = warp_row();
  const int lane = threadIdx.x % kWarp;
  const bool active = row < rows;
  const float* xr = x + (active ? row : 0) * cols;
  float sum = 0.0f;
  if (active)
    for (int64_t c = lane; c < cols; c += kWarp) sum += xr[c];
  const float mean = warp_sum(sum) / static_cast<float>(cols);
  float squares = 0.0f;
  if (active)
    for (int64_t c = lane; c < cols; c += kWarp) {
      const float d = xr[c] - mean;
      squares += d * d;
    }
  const float inv = 1.0f / sqrtf(warp_sum(squares) / static_cast<float>(cols) + eps);
  if (active)
    for (int64_t c = lane; c < cols; c += kWarp) store_float(y + row * cols + c, (xr[c] - mean) * inv * weight[c]);
}

// RMSNorm over groups of `group`: y = x / sqrt(mean(x^2) + eps) * weight; y may alias x (float32 y), stored as T.
template <typename T>
__global__ void rms_norm_kernel(const float* x, const float* weight, T* y, int64_t groups, int64_t group, float eps) {
  const int64_t g = warp_row();
  const int lane = threadIdx.x % kWarp;
  const bool active = g < groups;
  const float* xg = x + (active ? g : 0) * group;
  float squares = 0.0f;
  if (active)
    for (int64_t i = lane; i < group; i += kWarp) squares += xg[i] * xg[i];
  const float inv = 1.0f / sqrtf(warp_sum(squares) / static_cast<float>(group) + eps);
  if (active)
    for (int64_t i = lane; i < group; i += kWarp) store_float(y + g * group + i, xg[i] * inv * weight[i]);
}

// The same RMSNorm in place on column ranges: group g is `group` columns from offset + (g % per_row) * group of row
// g / per_row (rows `width` apart). Each group's sums and products are rms_norm_kernel's, so the results are equal.
template <typename T>
__global__ void rms_norm_columns_kernel(T* x, const float* weight, int64_t groups, int64_t group, int64_t per_row,
                                        int64_t width, int64_t offset, float eps) {
  const int64_t g = warp_row();
  const int lane = threadIdx.x % kWarp;
  const bool active = g < groups;
  T* xg = x + (active ? g / per_row * width + offset + g % per_row * group : 0);
  float squares = 0.0f;
  if (active)
    for (int64_t i = lane; i < group; i += kWarp) {
      const float v = load_float(xg + i);
      squares += v * v;
    }
  const float inv = 1.0f / sqrtf(warp_sum(squares) / static_cast<float>(group) + eps);
  if (active)
    for (int64_t i = lane; i < group; i += kWarp) store_float(xg + i, load_float(xg + i) * inv * weight[i]);
}

// x = x / (||x||_2 + eps) over groups of `group`, x float or bf16 (the sums in float).
template <typename T>
__global__ void l2_normalize_kernel(T* x, int64_t groups, int64_t group, float eps) {
  const int64_t g = warp_row();
  const int lane = threadIdx.x % kWarp;
  const bool active = g < groups;
  T* xg = x + (active ? g : 0) * group;
  float squares = 0.0f;
  if (active)
    for (int64_t i = lane; i < group; i += kWarp) {
      const float v = load_float(xg + i);
      squares += v * v;
    }
  const float inv = 1.0f / (sqrtf(warp_sum(squares)) + eps);
  if (active)
    for (int64_t i = lane; i < group; i += kWarp) store_float(xg + i, load_float(xg + i) * inv);
}

constexpr int kDotBlock = 256;

// Partial sums of a[b] . b[b] in double: grid (parts, batch); block `part` of entry b writes
// partial[b * parts + part]. The host adds the parts (a fixed order: the result does not vary run to run).
__global__ void batched_dot_kernel(const float* a, const float* b, int64_t per, double* partial) {
  LACT_SHARED(double, sums, [kDotBlock]);
  const int64_t entry = blockIdx.y, parts = gridDim.x;
  const float* pa = a + entry * per;
  const float* pb = b + entry * per;
  double sum = 0.0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kDotBlock + threadIdx.x; i < per; i += parts * kDotBlock)
    sum += static_cast<double>(pa[i]) * pb[i];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kDotBlock / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[entry * parts + blockIdx.x] = sums[0];
}

// One thread per column (b, c) of w [batch, rows, cols]: adjacent threads read adjacent columns.
__device__ __forceinline__ float column_norm(const float* w, int64_t b, int64_t c, int64_t rows, int64_t cols) {
  double sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double v = w[(b * rows + r) * cols + c];
    sum += v * v;
  }
  return static_cast<float>(sqrt(sum));
}

__global__ void column_norms_kernel(const float* w, float* norms, int64_t rows, int64_t cols, int64_t columns) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < columns;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    norms[i] = column_norm(w, i / cols, i % cols, rows, cols);
}

// w[b, :, c] *= target[b, c] / (||w[b, :, c]||_2 + eps).
__global__ void restore_column_norms_kernel(float* w, const float* target, int64_t rows, int64_t cols, int64_t columns,
                                            float eps) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < columns;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t b = i / cols, c = i % cols;
    const float factor = target[i] / (column_norm(w, b, c, rows, cols) + eps);
    for (int64_t r = 0; r < rows; ++r) w[(b * rows + r) * cols + c] *= factor;
  }
}

}  // namespace lact::cuda
