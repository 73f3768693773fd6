#include "kernels/cpu/cpu_conv.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#ifdef LACT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace lact {

namespace {

// What one convolution is: N, C, H, W, O, KH, KW, stride, padding, relu, bias.
using ConvolutionKey = std::array<int64_t, 11>;

ConvolutionKey key_of(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu) {
  return {x.dim(0),      x.dim(1),        x.dim(2), x.dim(3), weight.dim(0), weight.dim(2),
          weight.dim(3), int64_t{stride}, padding,  relu,     !bias.empty()};
}

#ifndef LACT_HAVE_DNNL
// Without oneDNN: each output element summed directly (correct, slow; LPIPS is the only caller).
void direct_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu,
                   Tensor& y) {
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t outputs = y.dim(1), out_h = y.dim(2), out_w = y.dim(3), kh = weight.dim(2), kw = weight.dim(3);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t o = 0; o < outputs; ++o)
      for (int64_t i = 0; i < out_h; ++i)
        for (int64_t j = 0; j < out_w; ++j) {
          float sum = bias.empty() ? 0.0f : bias.data()[o];
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t u = 0; u < kh; ++u) {
              const int64_t row = i * stride - padding + u;
              if (row < 0 || row >= height) continue;
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t col = j * stride - padding + v;
                if (col < 0 || col >= width) continue;
                sum += x.data()[((n * channels + c) * height + row) * width + col] *
                       weight.data()[((o * channels + c) * kh + u) * kw + v];
              }
            }
          y.data()[((n * outputs + o) * out_h + i) * out_w + j] = relu ? std::max(sum, 0.0f) : sum;
        }
}
#endif

}  // namespace

#ifdef LACT_HAVE_DNNL

// A convolution primitive per shape (creating one costs far more than running it), with the scratchpad it asks
// for (user mode: each call brings its own, so that renders on several threads may share a primitive).
struct CpuConvolutions::State {
  struct Primitive {
    dnnl::convolution_forward convolution;
    dnnl::memory::desc src, weights, bias, dst, scratchpad;
  };
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<ConvolutionKey, Primitive> primitives;
  std::mutex mutex;  // guards the map only

  Primitive make(const Tensor& x, const Tensor& weight, const Tensor& y, int stride, int padding, bool relu,
                 bool with_bias) {
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    Primitive p;
    p.src = dnnl::memory::desc(x.shape(), f32, tag::nchw);
    p.weights = dnnl::memory::desc(weight.shape(), f32, tag::oihw);
    p.bias = with_bias ? dnnl::memory::desc({weight.dim(0)}, f32, tag::x) : dnnl::memory::desc();
    p.dst = dnnl::memory::desc(y.shape(), f32, tag::nchw);
    const dnnl::memory::dims strides{stride, stride}, pad{padding, padding};
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                               p.src, p.weights, p.bias, p.dst, strides, pad, pad);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
    p.convolution = dnnl::convolution_forward(pd);
    p.scratchpad = pd.scratchpad_desc();
    return p;
  }
};

CpuConvolutions::CpuConvolutions() : state_(std::make_unique<State>()) {}
CpuConvolutions::~CpuConvolutions() = default;

void CpuConvolutions::conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
                             bool relu, Tensor& y) {
  if (y.numel() == 0) return;
  State::Primitive p;
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    const ConvolutionKey key = key_of(x, weight, bias, stride, padding, relu);
    auto found = state_->primitives.find(key);
    if (found == state_->primitives.end())
      found = state_->primitives.emplace(key, state_->make(x, weight, y, stride, padding, relu, !bias.empty())).first;
    p = found->second;  // handles: the primitive itself is shared, immutable
  }
  const dnnl::engine& engine = state_->engine;
  // oneDNN's memory objects take non-const handles; the convolution only reads SRC, WEIGHTS and BIAS.
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, {p.src, engine, x.data()}},
                                             {DNNL_ARG_WEIGHTS, {p.weights, engine, weight.data()}},
                                             {DNNL_ARG_DST, {p.dst, engine, y.data()}}};
  if (!bias.empty()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.bias, engine, bias.data()));
  std::vector<uint8_t> scratchpad(p.scratchpad.get_size());
  if (!scratchpad.empty()) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratchpad, engine, scratchpad.data()));
  dnnl::stream stream(engine);  // this call's own
  p.convolution.execute(stream, args);
  stream.wait();
}

#else

struct CpuConvolutions::State {};
CpuConvolutions::CpuConvolutions() = default;
CpuConvolutions::~CpuConvolutions() = default;

void CpuConvolutions::conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
                             bool relu, Tensor& y) {
  direct_conv2d(x, weight, bias, stride, padding, relu, y);
}

#endif

void cpu_max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t out_h = y.dim(2), out_w = y.dim(3);
#pragma omp parallel for schedule(static) if (planes * out_h * out_w > (1 << 14) && !omp_in_parallel())
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* in = x.data() + plane * height * width;
    float* out = y.data() + plane * out_h * out_w;
    for (int64_t i = 0; i < out_h; ++i)
      for (int64_t j = 0; j < out_w; ++j) {
        float most = in[i * stride * width + j * stride];
        for (int u = 0; u < kernel; ++u)
          for (int v = 0; v < kernel; ++v) {
            const float value = in[(i * stride + u) * width + j * stride + v];
            if (value > most || value != value) most = value;  // a NaN wins, as in PyTorch
          }
        out[i * out_w + j] = most;
      }
  }
}

}  // namespace lact
