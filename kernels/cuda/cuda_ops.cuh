// The launch side of every CUDA op: grid and block shapes and which kernel, on raw device pointers.
// Templated on the launcher: the CUDA backend passes one that launches on its stream and checks the launch;
// the CPU tests pass tests/common/cuda_emulator.h's, so these shapes are tested too, not only the kernels.
#pragma once

#include <stdexcept>
#include <string>

#include "kernels/cuda/attention_bf16_kernel.cuh"
#include "kernels/cuda/attention_fa2_launch.cuh"
#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/elementwise_kernels.cuh"
#include "kernels/cuda/reduction_kernels.cuh"

namespace lact::cuda {

constexpr int kElementwiseBlock = 256;
constexpr int64_t kMaxGridStrideBlocks = 1 << 16;  // grid-stride loops cover the rest
constexpr int64_t kMaxGridY = 65535;

inline dim3 grid_stride_blocks(int64_t n, int64_t per_block = kElementwiseBlock) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  return dim3(static_cast<unsigned>(blocks < kMaxGridStrideBlocks ? blocks : kMaxGridStrideBlocks));
}

template <typename Launch, typename T>
void fill(Launch& launch, T* p, int64_t n, float value) {
  if (n > 0) launch(fill_kernel<T>, grid_stride_blocks(n), dim3(kElementwiseBlock), p, n, value);
}

template <typename Launch>
void add(Launch& launch, float* y, const float* x, int64_t n) {
  if (n > 0) launch(add_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), y, x, n);
}

template <typename Launch>
void axpby(Launch& launch, float* y, float a, const float* x, float b, int64_t n) {
  if (n > 0) launch(axpby_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), y, a, x, b, n);
}

template <typename Launch>
void add_scaled_identity(Launch& launch, float* y, int64_t batch, int64_t n, float a) {
  const int64_t entries = batch * n;
  if (entries > 0)
    launch(add_scaled_identity_kernel, grid_stride_blocks(entries), dim3(kElementwiseBlock), y, n, entries, a);
}

template <Activation A, typename Launch, typename T>
void activation(Launch& launch, T* p, int64_t n, float shift = 0.0f) {
  if (n > 0) launch(activation_kernel<A, T>, grid_stride_blocks(n), dim3(kElementwiseBlock), p, n, shift);
}

template <typename Launch>
void add_bias(Launch& launch, float* x, const float* bias, int64_t n, int64_t cols) {
  if (n > 0) launch(add_bias_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), x, bias, n, cols);
}

template <typename Launch>
void scale_rows(Launch& launch, float* x, const float* scale, int64_t batch, int64_t rows, int64_t cols,
                int64_t batch_stride, int64_t row_stride) {
  const int64_t n = batch * rows * cols;
  if (n > 0)
    launch(scale_rows_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), x, scale, rows, cols, n, batch_stride,
           row_stride);
}

template <typename Launch>
void scale_batched(Launch& launch, float* x, const float* scale, int64_t batch, int64_t per) {
  const int64_t n = batch * per;
  if (n > 0) launch(scale_batched_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), x, scale, per, n);
}

template <typename Launch>
void swiglu(Launch& launch, const float* gate, const float* up, float* out, int64_t n) {
  if (n > 0) launch(swiglu_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), gate, up, out, n);
}

template <typename Launch>
void swiglu_backward(Launch& launch, float* gate, float* up, float* dhidden, int64_t n) {
  if (n > 0) launch(swiglu_backward_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), gate, up, dhidden, n);
}

// gate_up [batch, rows, 2 cols], dhidden [batch, rows, cols] (see swiglu_backward_packed_kernel).
template <typename Launch, typename T>
void swiglu_backward_packed(Launch& launch, T* gate_up, T* dhidden, const float* scale, int64_t batch, int64_t rows,
                            int64_t cols, int64_t part_stride, int64_t batch_stride, int64_t row_stride) {
  const int64_t n = batch * rows * cols;
  if (n > 0)
    launch(swiglu_backward_packed_kernel<T>, grid_stride_blocks(n), dim3(kElementwiseBlock), gate_up, dhidden, scale,
           rows, cols, n, part_stride, batch_stride, row_stride);
}

// gate_up [rows, 2 cols] (see swiglu_packed_kernel).
template <typename Launch, typename T>
void swiglu_packed(Launch& launch, T* gate_up, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  if (n > 0) launch(swiglu_packed_kernel<T>, grid_stride_blocks(n), dim3(kElementwiseBlock), gate_up, cols, n);
}

// dst = src rounded to bf16; src = the bf16 values widened to fp32 (exact).
template <typename Launch>
void to_bf16(Launch& launch, const float* src, __nv_bfloat16* dst, int64_t n) {
  if (n > 0) launch(to_bf16_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), src, dst, n);
}

template <typename Launch>
void from_bf16(Launch& launch, const __nv_bfloat16* src, float* dst, int64_t n) {
  if (n > 0) launch(from_bf16_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), src, dst, n);
}

template <typename Launch, typename Src, typename Dst>
void split_heads(Launch& launch, const Src* src, Dst* dst, int64_t views, int64_t tokens, int64_t width, int64_t offset,
                 int64_t heads, int64_t head_dim) {
  const int64_t n = views * heads * tokens * head_dim;
  if (n > 0)
    launch(split_heads_kernel<Src, Dst>, grid_stride_blocks(n), dim3(kElementwiseBlock), src, dst, tokens, width,
           offset, heads, head_dim, n);
}

template <typename Launch, typename Src, typename Dst>
void merge_heads(Launch& launch, const Src* src, Dst* dst, int64_t views, int64_t heads, int64_t tokens,
                 int64_t head_dim) {
  const int64_t n = views * heads * tokens * head_dim;
  if (n > 0)
    launch(merge_heads_kernel<Src, Dst>, grid_stride_blocks(n), dim3(kElementwiseBlock), src, dst, heads, tokens,
           head_dim, n);
}

template <typename Launch, typename T>
void scale_matrix(Launch& launch, T* c, int64_t batch, int64_t m, int64_t n, int64_t ldc, int64_t stride_c,
                  float beta) {
  const int64_t count = batch * m * n;
  if (count > 0)
    launch(scale_matrix_kernel<T>, grid_stride_blocks(count), dim3(kElementwiseBlock), c, m, n, ldc, stride_c, beta,
           count);
}

// c [batch, m, n] (row stride ldc, stride_c apart) = the sum of partial [slices, batch, m, n] + beta * c.
template <typename Launch>
void sum_slices(Launch& launch, const float* partial, int64_t slices, float* c, int64_t batch, int64_t m, int64_t n,
                int64_t ldc, int64_t stride_c, float beta) {
  const int64_t count = batch * m * n;
  if (count > 0)
    launch(sum_slices_kernel, grid_stride_blocks(count), dim3(kElementwiseBlock), partial, slices, c, m, n, ldc,
           stride_c, beta, count);
}

template <typename Launch>
void ray_tokens(Launch& launch, const RayPose* poses, const float* images, float* tokens, int64_t views, int height,
                int width, int patch) {
  const int64_t n = views * height * width;
  if (n > 0)
    launch(ray_tokens_kernel, grid_stride_blocks(n), dim3(kElementwiseBlock), poses, images, tokens, height, width,
           patch, n);
}

inline dim3 row_blocks(int64_t rows) { return grid_stride_blocks(rows, kRowsPerBlock); }

// f(begin, count) over [0, total) in chunks of at most `most`: launches whose grid has a size limit
// (row kernels have no grid-stride loop; gridDim.y is at most 65535).
template <typename F>
void for_chunks(int64_t total, int64_t most, F&& f) {
  for (int64_t begin = 0; begin < total; begin += most) f(begin, total - begin < most ? total - begin : most);
}

// Row kernels: one warp per row, at most 65536 blocks of 8 rows per launch.
constexpr int64_t kRowsPerLaunch = kMaxGridStrideBlocks * kRowsPerBlock;

template <typename Launch, typename T>
void layer_norm(Launch& launch, const float* x, const float* weight, T* y, int64_t rows, int64_t cols, float eps) {
  for_chunks(rows, kRowsPerLaunch, [&](int64_t begin, int64_t count) {
    launch(layer_norm_kernel<T>, row_blocks(count), dim3(kRowsPerBlock * kWarp), x + begin * cols, weight,
           y + begin * cols, count, cols, eps);
  });
}

template <typename Launch, typename T>
void rms_norm(Launch& launch, const float* x, const float* weight, T* y, int64_t groups, int64_t group, float eps) {
  for_chunks(groups, kRowsPerLaunch, [&](int64_t begin, int64_t count) {
    launch(rms_norm_kernel<T>, row_blocks(count), dim3(kRowsPerBlock * kWarp), x + begin * group, weight,
           y + begin * group, count, group, eps);
  });
}

// In place on columns [offset, offset + columns) of x's `rows` rows of `width`, in groups of `group`.
template <typename Launch, typename T>
void rms_norm_columns(Launch& launch, T* x, const float* weight, int64_t rows, int64_t width, int64_t offset,
                      int64_t columns, int64_t group, float eps) {
  const int64_t per_row = columns / group;
  if (per_row == 0) return;
  const int64_t rows_per_launch = kRowsPerLaunch / per_row > 0 ? kRowsPerLaunch / per_row : 1;
  for_chunks(rows, rows_per_launch, [&](int64_t begin, int64_t count) {
    launch(rms_norm_columns_kernel<T>, row_blocks(count * per_row), dim3(kRowsPerBlock * kWarp), x + begin * width,
           weight, count * per_row, group, per_row, width, offset, eps);
  });
}

template <typename Launch, typename T>
void l2_normalize(Launch& launch, T* x, int64_t groups, int64_t group, float eps) {
  for_chunks(groups, kRowsPerLaunch, [&](int64_t begin, int64_t count) {
    launch(l2_normalize_kernel<T>, row_blocks(count), dim3(kRowsPerBlock * kWarp), x + begin * group, count, group,
           eps);
  });
}

// How many partial sums batched_dot writes per batch entry (the caller sizes `partial` as batch * parts).
inline int64_t batched_dot_parts(int64_t per) {
  const int64_t parts = (per + 4 * kDotBlock - 1) / (4 * kDotBlock);  // >= 4 elements per thread
  return parts < 1 ? 1 : (parts > 256 ? 256 : parts);
}

template <typename Launch>
void batched_dot(Launch& launch, const float* a, const float* b, int64_t batch, int64_t per, double* partial) {
  const int64_t parts = batched_dot_parts(per);
  for_chunks(batch, kMaxGridY, [&](int64_t begin, int64_t count) {
    launch(batched_dot_kernel, dim3(static_cast<unsigned>(parts), static_cast<unsigned>(count)), dim3(kDotBlock),
           a + begin * per, b + begin * per, per, partial + begin * parts);
  });
}

template <typename Launch>
void column_norms(Launch& launch, const float* w, float* norms, int64_t batch, int64_t rows, int64_t cols) {
  const int64_t columns = batch * cols;
  if (columns > 0 && rows >= 0)
    launch(column_norms_kernel, grid_stride_blocks(columns), dim3(kElementwiseBlock), w, norms, rows, cols, columns);
}

template <typename Launch>
void restore_column_norms(Launch& launch, float* w, const float* target, int64_t batch, int64_t rows, int64_t cols,
                          float eps) {
  const int64_t columns = batch * cols;
  if (columns > 0)
    launch(restore_column_norms_kernel, grid_stride_blocks(columns), dim3(kElementwiseBlock), w, target, rows, cols,
           columns, eps);
}

// The largest head dim the fp32 kernel has an instantiation for (attention_library.h: larger ones run only through
// the library).
constexpr int kMaxAttentionDim = static_cast<int>(kMaxOwnAttentionHeadDim);

template <int D, typename Launch>
void attention_with(Launch& launch, const float* q, const float* k, const float* v, float* out, int64_t batch,
                    int64_t queries, int64_t keys, int d, float scale) {
  const unsigned query_blocks = static_cast<unsigned>((queries + kAttentionQueries - 1) / kAttentionQueries);
  for_chunks(batch, kMaxGridY, [&](int64_t begin, int64_t count) {
    launch(flash_attention_kernel<D>, dim3(query_blocks, static_cast<unsigned>(count)), dim3(kAttentionQueries),
           q + begin * queries * d, k + begin * keys * d, v + begin * keys * d, out + begin * queries * d, queries,
           keys, d, scale);
  });
}

template <int D, typename Launch>
void attention_bf16_with(Launch& launch, const float* q, const float* k, const float* v, float* out, int64_t batch,
                         int64_t queries, int64_t keys, float scale) {
  const unsigned query_blocks = static_cast<unsigned>((queries + kTcQueries - 1) / kTcQueries);
  for_chunks(batch, kMaxGridY, [&](int64_t begin, int64_t count) {
    launch(flash_attention_bf16_kernel<D>, dim3(query_blocks, static_cast<unsigned>(count)), dim3(kTcWarps * 32),
           q + begin * queries * D, k + begin * keys * D, v + begin * keys * D, out + begin * queries * D, queries,
           keys, scale);
  });
}

// Whether the tensor-core kernel takes this head dim.
inline bool attention_bf16_supports(int d) { return d == 16 || d == 32 || d == 64; }

// q, out [batch, queries, d]; k, v [batch, keys, d]; d <= kMaxAttentionDim. With `bf16` and a head dim a
// tensor-core kernel has (`kernel`: the FlashAttention-2-class one, else the wmma one), it computes on bf16
// operands; otherwise in fp32. No keys: out is zero (kAttentionOfNoKeys).
template <typename Launch>
void attention(Launch& launch, const float* q, const float* k, const float* v, float* out, int64_t batch,
               int64_t queries, int64_t keys, int d, float scale, bool bf16 = false,
               OwnAttentionKernel kernel = OwnAttentionKernel::Fa2) {
  if (batch == 0 || queries == 0) return;
  if (keys == 0) return fill(launch, out, batch * queries * d, kAttentionOfNoKeys);
  const AttentionOperands split = split_head_operands(q, k, v, out, queries, keys, d);
  if (bf16 && kernel == OwnAttentionKernel::Fa2 && attention_fa2_supports(d) && attention_fa2_aligned(split))
    attention_fa2(launch, split, batch, 1, queries, keys, d, scale);
  else if (bf16 && d == 16)
    attention_bf16_with<16>(launch, q, k, v, out, batch, queries, keys, scale);
  else if (bf16 && d == 32)
    attention_bf16_with<32>(launch, q, k, v, out, batch, queries, keys, scale);
  else if (bf16 && d == 64)
    attention_bf16_with<64>(launch, q, k, v, out, batch, queries, keys, scale);
  else if (d <= 16)
    attention_with<16>(launch, q, k, v, out, batch, queries, keys, d, scale);
  else if (d <= 32)
    attention_with<32>(launch, q, k, v, out, batch, queries, keys, d, scale);
  else if (d <= 64)
    attention_with<64>(launch, q, k, v, out, batch, queries, keys, d, scale);
  else if (d <= kMaxAttentionDim)
    attention_with<kMaxAttentionDim>(launch, q, k, v, out, batch, queries, keys, d, scale);
  else
    throw std::invalid_argument(head_dim_over_own_kernels(d, ""));
}

}  // namespace lact::cuda
