// Convolution and max-pooling as naive double-precision loops (NCHW, PyTorch's conv2d and max_pool2d): the
// reference tests/unit/kernels/test_ops.cpp holds every backend's conv2d and max_pool2d to, and
// tests/unit/core/test_lpips.cpp the CUDA kernels run through tests/common/cuda_emulator.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lact::test {

struct ConvShape {
  int64_t batch, channels, height, width, outputs, kh, kw;
  int stride, padding;
  int64_t out_h() const { return (height + 2 * padding - kh) / stride + 1; }
  int64_t out_w() const { return (width + 2 * padding - kw) / stride + 1; }
};

// y = conv(x, weight) + bias (empty: none), then max(y, 0) where `relu`.
inline std::vector<double> naive_conv2d(const ConvShape& s, const std::vector<float>& x,
                                        const std::vector<float>& weight, const std::vector<float>& bias, bool relu) {
  const int64_t oh = s.out_h(), ow = s.out_w();
  std::vector<double> y(static_cast<size_t>(s.batch * s.outputs * oh * ow));
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t o = 0; o < s.outputs; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = bias.empty() ? 0.0 : bias[o];
          for (int64_t c = 0; c < s.channels; ++c)
            for (int64_t u = 0; u < s.kh; ++u)
              for (int64_t v = 0; v < s.kw; ++v) {
                const int64_t r = i * s.stride - s.padding + u, q = j * s.stride - s.padding + v;
                if (r < 0 || r >= s.height || q < 0 || q >= s.width) continue;  // zero padding
                sum += double(x[((n * s.channels + c) * s.height + r) * s.width + q]) *
                       weight[((o * s.channels + c) * s.kh + u) * s.kw + v];
              }
          y[((n * s.outputs + o) * oh + i) * ow + j] = relu ? std::max(sum, 0.0) : sum;
        }
  return y;
}

// The maximum over kernel x kernel windows `stride` apart, inside each [height, width] plane of x.
inline std::vector<double> naive_max_pool2d(int64_t planes, int64_t height, int64_t width, int kernel, int stride,
                                            const std::vector<float>& x) {
  const int64_t oh = (height - kernel) / stride + 1, ow = (width - kernel) / stride + 1;
  std::vector<double> y(static_cast<size_t>(planes * oh * ow));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double most = -1e300;
        for (int u = 0; u < kernel; ++u)
          for (int v = 0; v < kernel; ++v)
            most = std::max(most, double(x[(p * height + i * stride + u) * width + j * stride + v]));
        y[(p * oh + i) * ow + j] = most;
      }
  return y;
}

// The shapes both tests run: AlexNet's five (at a small size), odd sizes, stride 3, no padding, a 1x1 kernel,
// rectangular kernels and images.
inline std::vector<ConvShape> conv_test_shapes() {
  return {
      {2, 3, 35, 29, 16, 11, 11, 4, 2},  // AlexNet's first layer
      {1, 16, 7, 9, 12, 5, 5, 1, 2},     // its second
      {2, 12, 5, 6, 10, 3, 3, 1, 1},     // its third to fifth
      {1, 5, 13, 11, 7, 3, 2, 3, 0},     // stride 3, no padding, a rectangular kernel
      {3, 9, 4, 7, 5, 1, 1, 1, 0},       // 1x1
  };
}

}  // namespace lact::test
