// Convolution and max-pooling for Backend::conv2d and Backend::max_pool2d (NCHW, fp32; the LPIPS metric's
// AlexNet, core/lpips.h): one thread per output element in a grid-stride loop, summing its window in float in
// the order the CPU's direct loop does. Plain kernels rather than cuDNN: LPIPS at 256x256 is about 1.7 GFLOP an
// image, a few milliseconds this way, against a render of the paper config that takes far longer; and these run
// in tests/common/cuda_emulator.h, where CI has no GPU.
#pragma once

#include "kernels/cuda/device_compat.h"

namespace lact::cuda {

constexpr int kConvBlock = 256;
constexpr int64_t kMaxConvBlocks = 1 << 16;  // the grid-stride loop covers the rest

// y [N, O, out_h, out_w] = conv(x [N, C, H, W], weight [O, C, kh, kw]) + bias (null: none), then ReLU if `relu`.
__global__ void conv2d_kernel(const float* x, const float* weight, const float* bias, float* y, int64_t channels,
                              int64_t height, int64_t width, int64_t outputs, int64_t out_h, int64_t out_w, int64_t kh,
                              int64_t kw, int64_t stride, int64_t padding, bool relu, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t col = i % out_w, row = (i / out_w) % out_h, o = (i / (out_w * out_h)) % outputs;
    const int64_t image = i / (out_w * out_h * outputs);
    float sum = bias ? bias[o] : 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const float* plane = x + (image * channels + c) * height * width;
      const float* kernel = weight + (o * channels + c) * kh * kw;
      for (int64_t u = 0; u < kh; ++u) {
        const int64_t r = row * stride - padding + u;
        if (r < 0 || r >= height) continue;
        for (int64_t v = 0; v < kw; ++v) {
          const int64_t q = col * stride - padding + v;
          if (q >= 0 && q < width) sum += plane[r * width + q] * kernel[u * kw + v];
        }
      }
    }
    y[i] = relu && !(sum > 0.0f) && sum == sum ? 0.0f : sum;  // ReLU; a NaN stays NaN
  }
}

// y [planes, out_h, out_w] = the maximum of each kernel x kernel window of x [planes, H, W], `stride` apart.
__global__ void max_pool2d_kernel(const float* x, float* y, int64_t height, int64_t width, int64_t out_h, int64_t out_w,
                                  int64_t kernel, int64_t stride, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t col = i % out_w, row = (i / out_w) % out_h, plane = i / (out_w * out_h);
    const float* in = x + plane * height * width + row * stride * width + col * stride;
    float most = in[0];
    for (int64_t u = 0; u < kernel; ++u)
      for (int64_t v = 0; v < kernel; ++v) {
        const float value = in[u * width + v];
        if (value > most || value != value) most = value;  // a NaN wins, as in PyTorch
      }
    y[i] = most;
  }
}

inline dim3 conv_blocks(int64_t n) {
  const int64_t blocks = (n + kConvBlock - 1) / kConvBlock;
  return dim3(static_cast<unsigned>(blocks < kMaxConvBlocks ? blocks : kMaxConvBlocks));
}

// The shapes as Backend::conv2d checked them: x [batch, channels, height, width], weight [outputs, channels, kh, kw].
template <typename Launch>
void conv2d(Launch& launch, const float* x, const float* weight, const float* bias, float* y, int64_t batch,
            int64_t channels, int64_t height, int64_t width, int64_t outputs, int64_t kh, int64_t kw, int stride,
            int padding, bool relu) {
  const int64_t out_h = (height + 2 * padding - kh) / stride + 1, out_w = (width + 2 * padding - kw) / stride + 1;
  const int64_t n = batch * outputs * out_h * out_w;
  if (n > 0)
    launch(conv2d_kernel, conv_blocks(n), dim3(kConvBlock), x, weight, bias, y, channels, height, width, outputs, out_h,
           out_w, kh, kw, int64_t{stride}, int64_t{padding}, relu, n);
}

template <typename Launch>
void max_pool2d(Launch& launch, const float* x, float* y, int64_t planes, int64_t height, int64_t width, int kernel,
                int stride) {
  const int64_t out_h = (height - kernel) / stride + 1, out_w = (width - kernel) / stride + 1;
  const int64_t n = planes * out_h * out_w;
  if (n > 0)
    launch(max_pool2d_kernel, conv_blocks(n), dim3(kConvBlock), x, y, height, width, out_h, out_w, int64_t{kernel},
           int64_t{stride}, n);
}

}  // namespace lact::cuda
