#include "kernels/cpu/cpu_backend.h"

#include <cblas.h>
#include <malloc.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "kernels/backend_factory.h"
#include "kernels/cpu/large_blocks.h"
#include "kernels/cpu/vector_math.h"
#include "system/host_memory.h"
#include "system/thread_limit.h"

namespace lact {

namespace {

constexpr int64_t kParallelMinimum = 1 << 14;  // below this many elements, threads cost more than they save

namespace vm = vector_math;

// counter = max(counter, value), atomically.
void raise_to(std::atomic<int64_t>& counter, int64_t value) {
  for (int64_t seen = counter.load(); value > seen && !counter.compare_exchange_weak(seen, value);) {
  }
}

// The elementwise ops' inner loops over spans of values, each built for the CPU's widest vectors
// (kernels/cpu/vector_math.h), and `in_spans` running them over n values on the OpenMP threads.
LACT_VECTOR_CLONES void silu_span(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = vm::silu(p[i]);
}
LACT_VECTOR_CLONES void gelu_span(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = vm::gelu(p[i]);
}
LACT_VECTOR_CLONES void sigmoid_span(float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) p[i] = vm::sigmoid(p[i]);
}
LACT_VECTOR_CLONES void swiglu_span(const float* pg, const float* pu, float* po, int64_t n) {
  for (int64_t i = 0; i < n; ++i) po[i] = vm::silu(pg[i]) * pu[i];
}
LACT_VECTOR_CLONES void swiglu_backward_span(float* pg, float* pu, float* pd, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = pg[i], u = pu[i], d = pd[i];
    const float sig = vm::sigmoid(g);
    const float act = g * sig;
    pg[i] = d * u * sig * (1.0f + g * (1.0f - sig));  // d/dgate of silu(gate) * up, times dhidden
    pu[i] = act * u;                                  // hidden
    pd[i] = d * act;                                  // d/dup
  }
}

LACT_VECTOR_CLONES double dot_span(const float* a, const float* b, int64_t n) {
  return vector_math::lane_sum(n, [a, b](int64_t j) { return static_cast<double>(a[j]) * b[j]; });
}
LACT_VECTOR_CLONES double sum_span(const float* a, int64_t n) {
  return vector_math::lane_sum(n, [a](int64_t j) { return static_cast<double>(a[j]); });
}
LACT_VECTOR_CLONES double centered_squares_span(const float* a, int64_t n, double mean) {
  return vector_math::lane_sum(n, [a, mean](int64_t j) { return (a[j] - mean) * (a[j] - mean); });
}

template <class SpanOp>
void in_spans(int64_t n, const SpanOp& op) {
  constexpr int64_t kSpan = 4096;
  const int64_t spans = (n + kSpan - 1) / kSpan;
#pragma omp parallel for schedule(static) if (n > kParallelMinimum)
  for (int64_t s = 0; s < spans; ++s) op(s * kSpan, std::min(kSpan, n - s * kSpan));
}

// Blocks of 1 MiB and more (every sizeable tensor) from their own mappings, returned to the system when freed.
// glibc's default raises this threshold as large blocks are freed (up to 32 MiB), after which freed tensors
// stay in its heap: the process's peak RSS was then up to 1.35x the most memory alive at once, so the memory
// estimate could not hold (docs/guide/scale.md). A fixed threshold keeps RSS at what is alive. Once per process.
void map_large_blocks() {
  static const bool once = [] { return mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1; }();
  (void)once;
}

}  // namespace

CpuBackend::CpuBackend(int threads, Precision precision, CpuGemmLibrary fp32_library) : precision_(precision) {
  map_large_blocks();
  set_threads(threads);
  if (fp32_library == CpuGemmLibrary::OneDnn || (fp32_library == CpuGemmLibrary::Auto && dnnl_available()))
    dnnl_fp32_ = std::make_unique<DnnlGemm>(false);
  if (precision_ == Precision::Bf16) {
    dnnl_bf16_ = std::make_unique<DnnlGemm>(true);
    bf16_constants_ = std::make_unique<Bf16Constants>(allocated_);
  }
}

// The high-water mark raised now to the peak the caller will reach (the last step's peak plus the growth still
// to come): the pool may hold that much meanwhile, and the process's peak stays the most alive at once.
void CpuBackend::expect_growth(int64_t bytes) {
  raise_to(*high_water_, step_peak_->load() + std::max<int64_t>(0, bytes));
  step_peak_->store(allocated_->load());
  step_start_.store(allocated_->load());
  step_allocated_.store(0);
}

// Room for every block the step allocated on top of what was alive at its start: the pool may then hold them all.
void CpuBackend::hold_step_blocks() {
  raise_to(*high_water_, step_start_.load() + step_allocated_.load());
  expect_growth(0);
}

void CpuBackend::mark_constant(const Tensor& t) {
  if (bf16_constants_) bf16_constants_->mark(t);
}

void CpuBackend::set_threads(int threads) {
  if (threads <= 0) return;  // keep the library defaults (the usable CPUs: system/thread_limit.h)
  threads = std::min(threads, usable_cpus());
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

std::string CpuBackend::device_description() const {
  const std::string fp32 = dnnl_fp32_ ? dnnl_version_text() : "OpenBLAS " + openblas_core_name();
  const int threads = omp_get_max_threads();
  return "CPU, " + std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") +
         (dnnl_bf16_ ? dnnl_version_text() + " bf16 products" : fp32 + " products");
}

int64_t CpuBackend::available_memory() const {
  // The least of MemAvailable, ulimit -v / -d and the memory cgroup's limit (system/host_memory.h); -1: none known.
  return host_memory_limit().bytes;
}

// Used in place (no kernel here needs more than float alignment); not counted as allocated: a mapped file's
// pages belong to the page cache until written.
Tensor CpuBackend::adopt_host(const Shape& shape, std::shared_ptr<float> storage) {
  float* data = storage.get();
  return Tensor(std::move(storage), data, shape, this);
}

Tensor CpuBackend::do_empty(const Shape& shape, DType) {  // float32 only: stores_bf16() is false
  const OpTimer timer(*profiler_, "empty");
  const size_t count = static_cast<size_t>(shape_numel(shape));
  const size_t bytes = ((count * sizeof(float) + 63) / 64) * 64;
  const int64_t now = allocated_->fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  void* memory = bytes ? pool_->take(bytes, now, high_water_->load()) : nullptr;
  if (bytes && !memory) {
    memory = allocate_block(bytes);
    if (bytes >= BlockPool::kSmallest) ++*fresh_large_blocks_;
  }
  if (bytes && !memory) {
    allocated_->fetch_sub(static_cast<int64_t>(bytes));
    throw std::runtime_error("out of memory: cannot allocate " + std::to_string(bytes >> 20) + " MiB for a tensor " +
                             shape_string(shape));
  }
  if (bytes >= BlockPool::kSmallest) step_allocated_.fetch_add(static_cast<int64_t>(bytes));
  raise_to(*peak_, now);
  raise_to(*high_water_, now);
  raise_to(*step_peak_, now);
  std::shared_ptr<std::atomic<int64_t>> allocated = allocated_, high_water = high_water_;
  std::shared_ptr<BlockPool> pool = pool_;
  std::shared_ptr<float> storage(static_cast<float*>(memory), [allocated, high_water, pool, bytes](float* p) {
    const int64_t alive = allocated->fetch_sub(static_cast<int64_t>(bytes)) - static_cast<int64_t>(bytes);
    pool->give(p, bytes, alive, high_water->load());
  });
  return Tensor(storage, storage.get(), shape, this);
}

void CpuBackend::do_upload(Tensor& dst, const float* host) {
  const OpTimer timer(*profiler_, "upload");
  std::memcpy(dst.data(), host, sizeof(float) * dst.numel());
}

void CpuBackend::do_download(const Tensor& src, float* host) {
  const OpTimer timer(*profiler_, "download");
  std::memcpy(host, src.data(), sizeof(float) * src.numel());
}

void CpuBackend::do_copy(Tensor& dst, const Tensor& src) {
  const OpTimer timer(*profiler_, "copy");
  if (dst.data() != src.data()) std::memcpy(dst.data(), src.data(), sizeof(float) * src.numel());
}

void CpuBackend::do_fill(Tensor& t, float value) {
  const OpTimer timer(*profiler_, "fill");
  float* p = t.data();
  const int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > kParallelMinimum)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

void CpuBackend::do_copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block,
                                int64_t count) {
  const OpTimer timer(*profiler_, "copy_blocks");
#pragma omp parallel for schedule(static) if (block * count > kParallelMinimum)
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * dst_stride, src + i * src_stride, sizeof(float) * block);
}

void CpuBackend::fp32_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                           MatrixOperand a, MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c,
                           int64_t batch) {
  if (dnnl_fp32_)
    return dnnl_fp32_->gemm(transpose_a, transpose_b, m, n, k, alpha, a, b, beta, c, ldc, stride_c, batch);
  for (int64_t i = 0; i < batch; ++i)
    cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a.data + i * a.stride,
                static_cast<blasint>(a.ld), b.data + i * b.stride, static_cast<blasint>(b.ld), beta, c + i * stride_c,
                static_cast<blasint>(ldc));
}

void CpuBackend::do_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                         MatrixOperand a, MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c,
                         int64_t batch) {
  const OpTimer timer(*profiler_, m, n, k, batch);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C untouched then; define it as beta * C (and 0 for beta = 0).
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t col = 0; col < n; ++col) {
          float& value = c[i * stride_c + r * ldc + col];
          value = beta == 0.0f ? 0.0f : beta * value;
        }
    return;
  }
  if (dnnl_bf16_)
    return dnnl_bf16_->gemm(transpose_a, transpose_b, m, n, k, alpha, a, b, beta, c, ldc, stride_c, batch,
                            bf16_constants_->find_or_pack(a, transpose_a, m, k, batch), bf16_constants_.get());
  fp32_gemm(transpose_a, transpose_b, m, n, k, alpha, a, b, beta, c, ldc, stride_c, batch);
}

void CpuBackend::do_add(Tensor& y, const Tensor& x) {
  const OpTimer timer(*profiler_, "add");
  float* py = y.data();
  const float* px = x.data();
  const int64_t n = y.numel();
#pragma omp parallel for schedule(static) if (n > kParallelMinimum)
  for (int64_t i = 0; i < n; ++i) py[i] += px[i];
}

void CpuBackend::do_axpby(Tensor& y, float a, const Tensor& x, float b) {
  const OpTimer timer(*profiler_, "axpby");
  float* py = y.data();
  const float* px = x.data();
  const int64_t n = y.numel();
#pragma omp parallel for schedule(static) if (n > kParallelMinimum)
  for (int64_t i = 0; i < n; ++i) py[i] = a * px[i] + b * py[i];
}

void CpuBackend::do_add_scaled_identity(Tensor& y, float a) {
  const OpTimer timer(*profiler_, "add_scaled_identity");
  const int64_t batch = y.dim(0), n = y.dim(1);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) y.data()[(b * n + i) * n + i] += a;
}

void CpuBackend::do_silu(Tensor& x) {
  const OpTimer timer(*profiler_, "silu");
  float* p = x.data();
  in_spans(x.numel(), [p](int64_t start, int64_t count) { silu_span(p + start, count); });
}

void CpuBackend::do_gelu(Tensor& x) {
  const OpTimer timer(*profiler_, "gelu");
  float* p = x.data();
  in_spans(x.numel(), [p](int64_t start, int64_t count) { gelu_span(p + start, count); });
}

void CpuBackend::do_sigmoid(Tensor& x) {
  const OpTimer timer(*profiler_, "sigmoid");
  float* p = x.data();
  in_spans(x.numel(), [p](int64_t start, int64_t count) { sigmoid_span(p + start, count); });
}

void CpuBackend::do_softplus(Tensor& x, float shift) {
  const OpTimer timer(*profiler_, "softplus");
  float* p = x.data();
  const int64_t n = x.numel();
  // PyTorch's softplus switches to the identity above 20 (beta 1, threshold 20); so do we.
#pragma omp parallel for schedule(static) if (n > kParallelMinimum)
  for (int64_t i = 0; i < n; ++i) {
    const float v = p[i] + shift;
    p[i] = v > 20.0f ? v : std::log1p(std::exp(v));
  }
}

void CpuBackend::do_add_bias(Tensor& x, const Tensor& bias) {
  const OpTimer timer(*profiler_, "add_bias");
  const int64_t cols = bias.numel(), rows = x.numel() / cols;
  float* p = x.data();
  const float* pb = bias.data();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) p[r * cols + c] += pb[c];
}

void CpuBackend::do_layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  const OpTimer timer(*profiler_, "layer_norm");
  const int64_t cols = weight.numel(), rows = x.numel() / cols;
  const float* px = x.data();
  const float* pw = weight.data();
  float* py = y.data();
#pragma omp parallel for schedule(static) if (rows * cols > kParallelMinimum)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * cols;
    float* yr = py + r * cols;
    const double mean = sum_span(xr, cols) / static_cast<double>(cols);
    const double var = centered_squares_span(xr, cols, mean) / static_cast<double>(cols);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float m = static_cast<float>(mean);
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - m) * inv * pw[c];
  }
}

void CpuBackend::do_rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y) {
  const OpTimer timer(*profiler_, "rms_norm");
  const int64_t groups = x.numel() / group;
  const float* px = x.data();
  const float* pw = weight.data();
  float* py = y.data();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelMinimum)
  for (int64_t g = 0; g < groups; ++g) {
    const float* xg = px + g * group;
    float* yg = py + g * group;
    const double sum = dot_span(xg, xg, group);
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(group) + eps));
    for (int64_t i = 0; i < group; ++i) yg[i] = xg[i] * inv * pw[i];
  }
}

// The rows' column ranges, each normalized as do_rms_norm normalizes a group (the same sums, in the same order).
void CpuBackend::do_rms_norm_columns(Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight,
                                     float eps) {
  const OpTimer timer(*profiler_, "rms_norm");
  const int64_t group = weight.numel(), width = x.dim(x.rank() - 1), per_row = columns / group;
  const int64_t groups = width > 0 ? x.numel() / width * per_row : 0;
  float* px = x.data();
  const float* pw = weight.data();
#pragma omp parallel for schedule(static) if (groups * group > kParallelMinimum)
  for (int64_t g = 0; g < groups; ++g) {
    float* xg = px + g / per_row * width + column_offset + g % per_row * group;
    const double sum = dot_span(xg, xg, group);
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(group) + eps));
    for (int64_t i = 0; i < group; ++i) xg[i] = xg[i] * inv * pw[i];
  }
}

void CpuBackend::do_l2_normalize(Tensor& x, int64_t group, float eps) {
  const OpTimer timer(*profiler_, "l2_normalize");
  const int64_t groups = x.numel() / group;
  float* px = x.data();
#pragma omp parallel for schedule(static) if (x.numel() > kParallelMinimum)
  for (int64_t g = 0; g < groups; ++g) {
    float* xg = px + g * group;
    const float inv = static_cast<float>(1.0 / (std::sqrt(dot_span(xg, xg, group)) + eps));
    for (int64_t i = 0; i < group; ++i) xg[i] *= inv;
  }
}

void CpuBackend::do_scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride) {
  const OpTimer timer(*profiler_, "scale_rows");
  const int64_t batch = x.dim(0), rows = x.dim(1), cols = x.dim(2);
  float* px = x.data();
#pragma omp parallel for collapse(2) schedule(static) if (x.numel() > kParallelMinimum)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      const float s = scale[b * scale_batch_stride + r * scale_row_stride];
      float* row = px + (b * rows + r) * cols;
      for (int64_t c = 0; c < cols; ++c) row[c] *= s;
    }
}

void CpuBackend::do_split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                                Tensor& dst) {
  const OpTimer timer(*profiler_, "split_heads");
  const int64_t views = src.dim(0), tokens = src.dim(1), width = src.dim(2);
  const float* ps = src.data();
  float* pd = dst.data();
#pragma omp parallel for collapse(2) schedule(static) if (dst.numel() > kParallelMinimum)
  for (int64_t v = 0; v < views; ++v)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        std::memcpy(pd + ((v * heads + h) * tokens + t) * head_dim,
                    ps + (v * tokens + t) * width + column_offset + h * head_dim, sizeof(float) * head_dim);
}

// Row by row what silu_span, split_heads and do_l2_normalize do to it (the same functions and sums): the same bits.
void CpuBackend::do_split_heads_silu(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                                     float l2_eps, Tensor& dst) {
  const OpTimer timer(*profiler_, "split_heads_silu");
  const int64_t tokens = src.dim(1), width = src.dim(2), rows = dst.numel() / head_dim;
  const float* ps = src.data();
  float* pd = dst.data();
#pragma omp parallel for schedule(static) if (dst.numel() > kParallelMinimum)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = r % tokens, h = r / tokens % heads, v = r / tokens / heads;
    float* row = pd + r * head_dim;
    std::memcpy(row, ps + (v * tokens + t) * width + column_offset + h * head_dim, sizeof(float) * head_dim);
    silu_span(row, head_dim);
    if (l2_eps < 0) continue;
    const float inv = static_cast<float>(1.0 / (std::sqrt(dot_span(row, row, head_dim)) + l2_eps));
    for (int64_t i = 0; i < head_dim; ++i) row[i] *= inv;
  }
}

void CpuBackend::do_merge_heads(const Tensor& src, Tensor& dst) {
  const OpTimer timer(*profiler_, "merge_heads");
  const int64_t views = src.dim(0), heads = src.dim(1), tokens = src.dim(2), head_dim = src.dim(3);
  const float* ps = src.data();
  float* pd = dst.data();
#pragma omp parallel for collapse(2) schedule(static) if (dst.numel() > kParallelMinimum)
  for (int64_t v = 0; v < views; ++v)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < heads; ++h)
        std::memcpy(pd + (v * tokens + t) * heads * head_dim + h * head_dim,
                    ps + ((v * heads + h) * tokens + t) * head_dim, sizeof(float) * head_dim);
}

void CpuBackend::do_ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width,
                               int patch, Tensor& tokens) {
  const OpTimer timer(*profiler_, "ray_tokens");
  const int64_t views = static_cast<int64_t>(poses.size());
  float* out = tokens.data();
  const float* rgb = images ? images->data() : nullptr;
#pragma omp parallel for collapse(2) schedule(static) if (tokens.numel() > kParallelMinimum)
  for (int64_t view = 0; view < views; ++view)
    for (int v = 0; v < height; ++v)
      for (int u = 0; u < width; ++u) {
        const int64_t pixel = (view * height + v) * width + u;
        ray_token_channels(poses[view], u, v, rgb ? rgb + pixel * 3 : nullptr,
                           out + ray_token_offset(view, u, v, height, width, patch));
      }
}

void CpuBackend::do_ray_tokens(const Tensor& poses, int height, int width, int patch, Tensor& tokens) {
  std::vector<RayPose> unpacked(static_cast<size_t>(poses.dim(0)));
  std::memcpy(unpacked.data(), poses.data(), unpacked.size() * sizeof(RayPose));
  do_ray_tokens(unpacked, nullptr, height, width, patch, tokens);
}

void CpuBackend::do_swiglu(const Tensor& gate, const Tensor& up, Tensor& out) {
  const OpTimer timer(*profiler_, "swiglu");
  const float* pg = gate.data();
  const float* pu = up.data();
  float* po = out.data();
  in_spans(gate.numel(), [=](int64_t start, int64_t count) { swiglu_span(pg + start, pu + start, po + start, count); });
}

void CpuBackend::do_swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden) {
  const OpTimer timer(*profiler_, "swiglu_backward");
  float* pg = gate.data();
  float* pu = up.data();
  float* pd = dhidden.data();
  in_spans(gate.numel(),
           [=](int64_t start, int64_t count) { swiglu_backward_span(pg + start, pu + start, pd + start, count); });
}

// Row by row: swiglu_backward_span on the row's gate, up and dhidden, then each output times its scale while the
// row is in cache (the same products as do_swiglu_backward and then do_scale_rows on each); dL/dup and the hidden
// trade places, so that gate_up ends as [s0 dL/dgate | s2 dL/dup] (Backend::swiglu_backward_packed).
void CpuBackend::do_swiglu_backward_packed(Tensor& gate_up, Tensor& dhidden, const float* scale,
                                           int64_t scale_part_stride, int64_t scale_batch_stride,
                                           int64_t scale_row_stride) {
  const OpTimer timer(*profiler_, "swiglu_backward");
  const int64_t rows = dhidden.dim(1), cols = dhidden.dim(2), all_rows = dhidden.dim(0) * rows;
  float *pgu = gate_up.data(), *pd = dhidden.data();
#pragma omp parallel for schedule(static) if (dhidden.numel() > kParallelMinimum)
  for (int64_t row = 0; row < all_rows; ++row) {
    float *g = pgu + row * 2 * cols, *u = g + cols, *d = pd + row * cols;
    const float* s = scale + row / rows * scale_batch_stride + row % rows * scale_row_stride;
    swiglu_backward_span(g, u, d, cols);  // g <- dL/dgate, u <- hidden, d <- dL/dup
    const float s0 = s[0], s1 = s[scale_part_stride], s2 = s[2 * scale_part_stride];
    for (int64_t c = 0; c < cols; ++c) {
      const float hidden = u[c];
      g[c] *= s0;
      u[c] = d[c] * s2;
      d[c] = hidden * s1;
    }
  }
}

void CpuBackend::do_swiglu_packed(Tensor& gate_up) {
  const OpTimer timer(*profiler_, "swiglu");
  const int64_t cols = gate_up.dim(2) / 2, all_rows = gate_up.dim(0) * gate_up.dim(1);
  float* p = gate_up.data();
#pragma omp parallel for schedule(static) if (gate_up.numel() > kParallelMinimum)
  for (int64_t row = 0; row < all_rows; ++row)
    swiglu_span(p + row * 2 * cols, p + row * 2 * cols + cols, p + row * 2 * cols, cols);
}

void CpuBackend::do_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
                           bool relu, Tensor& y) {
  // the FLOPs (two per multiply-add), for a rate in lact bench --profile
  const double flops = 2.0 * static_cast<double>(y.numel()) * weight.dim(1) * weight.dim(2) * weight.dim(3);
  const OpTimer timer(*profiler_, "conv2d", flops);
  convolutions_->conv2d(x, weight, bias, stride, padding, relu, y);
}

void CpuBackend::do_max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y) {
  const OpTimer timer(*profiler_, "max_pool2d");
  cpu_max_pool2d(x, kernel, stride, y);
}

std::vector<double> CpuBackend::do_batched_dot(const Tensor& a, const Tensor& b) {
  const OpTimer timer(*profiler_, "batched_dot");
  const int64_t batch = a.dim(0), per = a.numel() / batch;
  constexpr int64_t kSpan = 1 << 15;
  const int64_t spans = (per + kSpan - 1) / kSpan;
  std::vector<double> partial(static_cast<size_t>(batch * spans));
#pragma omp parallel for collapse(2) schedule(static) if (batch * per > kParallelMinimum)
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t s = 0; s < spans; ++s)
      partial[i * spans + s] =
          dot_span(a.data() + i * per + s * kSpan, b.data() + i * per + s * kSpan, std::min(kSpan, per - s * kSpan));
  std::vector<double> result(static_cast<size_t>(batch), 0.0);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t s = 0; s < spans; ++s) result[i] += partial[i * spans + s];
  return result;
}

namespace {

// Column sums of squares in double: each thread sums a band of columns down every row.
void column_norms_into(const float* w, int64_t batch, int64_t rows, int64_t cols, float* norms) {
  constexpr int64_t kBand = 256;
  const int64_t bands = (cols + kBand - 1) / kBand;
#pragma omp parallel for collapse(2) schedule(static) if (batch * rows * cols > kParallelMinimum)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t band = 0; band < bands; ++band) {
      const int64_t c0 = band * kBand, width = std::min(kBand, cols - c0);
      double sums[kBand] = {};
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = w + (b * rows + r) * cols + c0;
        for (int64_t c = 0; c < width; ++c) sums[c] += static_cast<double>(row[c]) * row[c];
      }
      for (int64_t c = 0; c < width; ++c) norms[b * cols + c0 + c] = static_cast<float>(std::sqrt(sums[c]));
    }
}

}  // namespace

void CpuBackend::do_column_norms(const Tensor& w, Tensor& norms) {
  const OpTimer timer(*profiler_, "column_norms");
  column_norms_into(w.data(), w.dim(0), w.dim(1), w.dim(2), norms.data());
}

void CpuBackend::do_restore_column_norms(Tensor& w, const Tensor& target, float eps) {
  const OpTimer timer(*profiler_, "restore_column_norms");
  const int64_t batch = w.dim(0), rows = w.dim(1), cols = w.dim(2);
  std::vector<float> factor(static_cast<size_t>(batch * cols));
  column_norms_into(w.data(), batch, rows, cols, factor.data());
  for (int64_t i = 0; i < batch * cols; ++i) factor[i] = target.data()[i] / (factor[i] + eps);
  float* pw = w.data();
#pragma omp parallel for collapse(2) schedule(static) if (batch * rows * cols > kParallelMinimum)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      float* row = pw + (b * rows + r) * cols;
      const float* f = factor.data() + b * cols;
      for (int64_t c = 0; c < cols; ++c) row[c] *= f[c];
    }
}

void CpuBackend::do_scale_batched(Tensor& x, const std::vector<float>& scale) {
  const OpTimer timer(*profiler_, "scale_batched");
  if (x.numel() == 0) return;
  const int64_t batch = x.dim(0), per = x.numel() / batch;
  for (int64_t b = 0; b < batch; ++b) {
    float* p = x.data() + b * per;
    const float s = scale[b];
#pragma omp parallel for schedule(static) if (per > kParallelMinimum)
    for (int64_t i = 0; i < per; ++i) p[i] *= s;
  }
}

std::unique_ptr<Backend> make_cpu_backend(int threads, Precision precision, CpuGemmLibrary fp32_library) {
  return std::make_unique<CpuBackend>(threads, precision, fp32_library);
}

}  // namespace lact
