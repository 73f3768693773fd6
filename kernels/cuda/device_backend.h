// The GPU backend's ops, written once over a `Device` that supplies memory, copies, kernel launches and the
// GEMM. cuda_backend.cu instantiates it with the CUDA runtime and cuBLAS;
// tests/unit/kernels/test_cuda_emulated.cpp with host memory, the kernel emulator and a column-major BLAS, so
// that this code (argument order, shapes, scratch buffers) runs the official fixture in CI, not only the kernels
// one by one.
//
// A Device provides:
//   Launcher& launcher();                         launches cuda_ops.cuh's kernels
//   std::string description() const;  int64_t available() const;  int64_t used() const;  int64_t peak() const;
//   void reset_peak();  void synchronize();
//   std::shared_ptr<float> allocate(int64_t bytes, const Shape& shape);   throws on out-of-memory
//   void* scratch(size_t bytes);  void release(void* p);                    stream-ordered temporaries
//   void to_device(void* dst, const void* host, size_t bytes);            returns once `host` may be reused
//   void to_host(void* host, const void* src, size_t bytes);              complete on return
//   void copy(void* dst, const void* src, size_t bytes);
//   void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows);
//   void gemm(const cuda::ColumnMajorGemm& g, float alpha, float beta, Precision precision);
//   size_t record_event();  double elapsed_ms(size_t from, size_t to);  void clear_events();   for profiling
//   bool begin_capture();  std::unique_ptr<Recording> end_capture();  void replay(const Recording&);
//   cuda::AttentionLibrary* attention_library();   a fused bf16 attention (cuDNN's), null when there is none:
//   std::string attention_unavailable() const;      then why (cuda::kAttentionChosenOwn when LACT_ATTENTION=own,
//                                                   kAttentionChosenWmma for wmma)
// The attention ops live in kernels/cuda/device_attention.h (which code runs them, LACT_ATTENTION); the bf16 storage
// of activations (LACT_BF16_ACTIVATIONS) and the choice of split-K (LACT_SPLIT_K) are read from the environment here.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/bf16_storage.h"
#include "kernels/cuda/conv_kernels.cuh"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/cudnn_sdpa_plan.h"
#include "kernels/cuda/device_attention.h"
#include "kernels/cuda/gemm_plan.h"
#include "kernels/cuda/split_heads_silu.cuh"
#include "kernels/op_checks.h"

namespace lact::cuda {

template <typename Device>
class DeviceBackend final : public Backend, public AttentionPathSource {
 public:
  template <typename... DeviceArgs>
  DeviceBackend(std::string name, Precision precision, DeviceArgs&&... args)
      : device_(std::forward<DeviceArgs>(args)...),
        name_(std::move(name)),
        precision_(precision),
        attention_(device_, precision) {}

  Device& device() { return device_; }
  // The most bytes one library attention call stages (kSdpaStagingBudgetBytes); the tests set a small one to make
  // the chunking show at small sizes.
  void set_attention_staging_budget(int64_t bytes) { attention_.set_staging_budget(bytes); }

  std::string name() const override { return name_; }
  void set_threads(int) override {}
  Precision precision() const override { return precision_; }
  bool stores_bf16() const override { return true; }
  DType activation_type() const override {
    return precision_ == Precision::Bf16 && bf16_activations_ ? DType::BF16 : DType::F32;
  }
  // A weight read by linear_bf16 keeps a bf16 copy, made here for a matrix (a linear's weight: at load, so the
  // memory check that follows counts it and no render recording converts it every frame) and on first use in
  // linear_bf16 for any other marked tensor (outside a recording). The copy lives as long as the weight does (an
  // entry whose weight is gone is dropped).
  void mark_constant(const Tensor& t) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (t.dtype() != DType::F32 || t.numel() == 0 || activation_type() != DType::BF16) return;
    drop_expired_constants();
    constants_.emplace(ConstantKey{t.raw(), t.numel()}, ConstantCopy{t.storage(), nullptr});
    if (t.rank() == 2) constant_bf16(t);
  }
  std::string device_description() const override {
    return device_.description() + ", " + precision_name(precision_) + " products";
  }
  void synchronize() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    no_host_traffic("synchronize");
    device_.synchronize();
  }
  int64_t available_memory() const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    no_host_traffic("a memory query");
    return device_.available();
  }
  int64_t allocated_memory() const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    no_host_traffic("a memory query");
    return device_.used();
  }
  int64_t peak_memory() const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    no_host_traffic("a memory query");
    return device_.peak();
  }
  void reset_peak_memory() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    no_host_traffic("a memory query");
    device_.reset_peak();
  }
  // The recording thread holds the backend's lock from begin to end: a stream capture takes whatever work
  // reaches the stream, so another thread's ops (the viewer encoding while it renders) must wait.
  bool begin_recording() override {
    mutex_.lock();
    if (recording_ || profiling_ || !recording_enabled_ || !device_.begin_capture()) {
      mutex_.unlock();
      return false;
    }
    recording_ = true;
    return true;
  }
  bool can_record() const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return recording_enabled_;
  }
  void disable_recording() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    recording_enabled_ = false;
  }
  std::unique_ptr<Recording> end_recording() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (!recording_) return nullptr;
    recording_ = false;
    mutex_.unlock();  // begin_recording's lock (the guard above still holds one level)
    std::unique_ptr<Recording> recording = device_.end_capture();
    if (!attention_.take_abandoned()) return recording;
    // An attention shape the library had not prepared was met: preparing it cannot be captured, so nothing of
    // this recording is kept and the caller runs the ops directly (which prepares the shape for the next one).
    return nullptr;
  }
  void replay(const Recording& recording) override {
    OpScope scope(*this, "replay");
    no_host_traffic("replay");
    device_.replay(recording);
  }

  // Which code ran the bf16 attention (DeviceAttention::path).
  std::string attention_path() const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return attention_.path();
  }
  std::string attention_head_dim_problem(int64_t head_dim) const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return attention_.head_dim_problem(head_dim);
  }

  bool start_profiling() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    device_.clear_events();
    timings_.clear();
    profiling_ = true;
    return true;
  }
  std::vector<OpProfile> stop_profiling() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    device_.synchronize();
    std::map<std::string, OpProfile> by_op;
    for (const Timing& t : timings_) {
      OpProfile& p = by_op[t.op];
      p.op = t.op;
      ++p.calls;
      p.milliseconds += device_.elapsed_ms(t.start, t.end);
    }
    profiling_ = false;
    timings_.clear();
    device_.clear_events();
    std::vector<OpProfile> result;
    for (auto& entry : by_op) result.push_back(entry.second);
    std::sort(result.begin(), result.end(),
              [](const OpProfile& a, const OpProfile& b) { return a.milliseconds > b.milliseconds; });
    return result;
  }

 private:
  // The ops (Backend's public ops have checked the operands; the checks here are this device's own limits).
  // ---- memory
  Tensor do_empty(const Shape& shape, DType dtype) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    std::shared_ptr<float> storage = device_.allocate(shape_numel(shape) * dtype_bytes(dtype), shape);
    return Tensor(storage, storage.get(), shape, this, dtype);
  }
  // A bf16 tensor's values are rounded (or widened) on the host: the transfer moves the stored bytes.
  void do_upload(Tensor& dst, const float* host) override {
    OpScope scope(*this, "upload");
    no_host_traffic("upload");
    if (dst.numel() == 0) return;
    if (dst.dtype() == DType::BF16) {
      std::vector<uint16_t> bits(static_cast<size_t>(dst.numel()));
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = bf16_bits(host[i]);
      device_.to_device(dst.raw(), bits.data(), static_cast<size_t>(dst.bytes()));
      device_.synchronize();  // `bits` is freed on return
      return;
    }
    device_.to_device(dst.raw(), host, static_cast<size_t>(dst.bytes()));
    device_.synchronize();  // the caller may free `host` on return
  }
  void do_download(const Tensor& src, float* host) override {
    OpScope scope(*this, "download");
    no_host_traffic("download");
    if (src.numel() == 0) return;
    if (src.dtype() == DType::F32) return device_.to_host(host, src.raw(), static_cast<size_t>(src.bytes()));
    std::vector<uint16_t> bits(static_cast<size_t>(src.numel()));
    device_.to_host(bits.data(), src.raw(), static_cast<size_t>(src.bytes()));
    for (size_t i = 0; i < bits.size(); ++i) host[i] = bf16_value(bits[i]);
  }
  void do_copy(Tensor& dst, const Tensor& src) override {
    OpScope scope(*this, "copy");
    if (dst.dtype() == DType::BF16 && src.dtype() == DType::F32)
      return to_bf16(device_.launcher(), src.data(), bf16_data(dst), src.numel());
    if (dst.dtype() == DType::F32 && src.dtype() == DType::BF16)
      return from_bf16(device_.launcher(), bf16_data(src), dst.data(), src.numel());
    if (dst.raw() != src.raw() && src.numel() > 0) device_.copy(dst.raw(), src.raw(), static_cast<size_t>(src.bytes()));
  }
  void do_fill(Tensor& t, float value) override {
    OpScope scope(*this, "fill");
    if (t.dtype() == DType::BF16) return cuda::fill(device_.launcher(), bf16_data(t), t.numel(), value);
    cuda::fill(device_.launcher(), t.data(), t.numel(), value);
  }
  void do_copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block,
                      int64_t count) override {
    if (block <= 0 || count <= 0) return;
    OpScope scope(*this, "copy_blocks");
    const size_t width = static_cast<size_t>(block) * sizeof(float);
    if (count == 1) return device_.copy(dst, src, width);
    device_.copy_2d(dst, static_cast<size_t>(dst_stride) * sizeof(float), src,
                    static_cast<size_t>(src_stride) * sizeof(float), width, static_cast<size_t>(count));
  }

  // ---- matrix products
  void do_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
               MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch) override {
    product(transpose_a, transpose_b, m, n, k, alpha, {a.data, a.ld, a.stride, DType::F32},
            {b.data, b.ld, b.stride, DType::F32}, beta, c, DType::F32, ldc, stride_c, batch);
  }
  void do_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, Bf16Operand a,
                    Bf16Operand b, float beta, void* c, DType c_type, int64_t ldc, int64_t stride_c,
                    int64_t batch) override {
    product(transpose_a, transpose_b, m, n, k, alpha, {a.data, a.ld, a.stride, DType::BF16},
            {b.data, b.ld, b.stride, DType::BF16}, beta, c, c_type, ldc, stride_c, batch);
  }
  // gemm and gemm_bf16: one cuBLAS call, or split-K into float32 partials where it pays and C is float32.
  void product(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, TypedOperand a,
               TypedOperand b, float beta, void* c, DType c_type, int64_t ldc, int64_t stride_c, int64_t batch) {
    if (m == 0 || n == 0 || batch == 0) return;
    OpScope scope(*this, "gemm");
    if (k == 0) {  // as CpuBackend defines it: C = beta * C, 0 for beta = 0
      if (c_type == DType::BF16)
        return cuda::scale_matrix(device_.launcher(), static_cast<__nv_bfloat16*>(c), batch, m, n, ldc, stride_c, beta);
      return cuda::scale_matrix(device_.launcher(), static_cast<float*>(c), batch, m, n, ldc, stride_c, beta);
    }
    const SplitK split = split_k_ && c_type == DType::F32 ? plan_split_k(m, n, k, batch) : SplitK{1, k};
    if (split.slices > 1)
      return gemm_split_k(split, transpose_a, transpose_b, m, n, k, alpha, a, b, beta, static_cast<float*>(c), ldc,
                          stride_c, batch);
    device_.gemm(plan_typed_gemm(transpose_a, transpose_b, m, n, k, a, b, c, c_type, ldc, stride_c, batch), alpha, beta,
                 precision_);
  }

  // y = x W^T on bf16 operands (Backend::linear_bf16): a float32 x rounded into scratch, the weight's bf16 copy (a
  // marked constant's, made once) or a rounded scratch copy, y written in its own type by cuBLAS's bf16 kernels
  // (beta 1: added into y, the residual stream's rows).
  void do_linear_bf16(const Tensor& x, const Tensor& weight, Tensor& y, float beta) override {
    const int64_t rows = x.dim(0), in = x.dim(1), out = weight.dim(0);
    if (rows == 0 || out == 0) return;
    const TypedOperand none{nullptr, 1, 0, DType::BF16};
    if (in == 0) return product(false, true, rows, out, 0, 1.0f, none, none, beta, y.raw(), y.dtype(), out, 0, 1);
    const void* xb = x.dtype() == DType::BF16 ? x.raw() : rounded_copy(x.data(), x.numel());
    const void* wb = constant_bf16(weight);
    const bool staged_weight = wb == nullptr;
    if (staged_weight) wb = rounded_copy(weight.data(), weight.numel());
    product(false, true, rows, out, in, 1.0f, {xb, in, 0, DType::BF16}, {wb, in, 0, DType::BF16}, beta, y.raw(),
            y.dtype(), out, 0, 1);
    if (staged_weight) device_.release(const_cast<void*>(wb));
    if (x.dtype() != DType::BF16) device_.release(const_cast<void*>(xb));
  }

  // ---- elementwise and row ops
  void do_add(Tensor& y, const Tensor& x) override {
    OpScope scope(*this, "add");
    cuda::add(device_.launcher(), y.data(), x.data(), y.numel());
  }
  void do_axpby(Tensor& y, float a, const Tensor& x, float b) override {
    OpScope scope(*this, "axpby");
    cuda::axpby(device_.launcher(), y.data(), a, x.data(), b, y.numel());
  }
  void do_add_scaled_identity(Tensor& y, float a) override {
    OpScope scope(*this, "add_scaled_identity");
    cuda::add_scaled_identity(device_.launcher(), y.data(), y.dim(0), y.dim(1), a);
  }
  void do_silu(Tensor& x) override { activation<Activation::Silu>(x, 0.0f); }
  void do_gelu(Tensor& x) override { activation<Activation::Gelu>(x, 0.0f); }
  void do_sigmoid(Tensor& x) override { activation<Activation::Sigmoid>(x, 0.0f); }
  void do_softplus(Tensor& x, float shift) override { activation<Activation::Softplus>(x, shift); }
  void do_add_bias(Tensor& x, const Tensor& bias) override {
    const int64_t cols = bias.numel();
    OpScope scope(*this, "add_bias");
    cuda::add_bias(device_.launcher(), x.data(), bias.data(), x.numel(), cols);
  }
  void do_layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override {
    const int64_t cols = weight.numel();
    OpScope scope(*this, "layer_norm");
    if (y.dtype() == DType::BF16)  // only products read it (BlockModule::input_type): stored as they round it
      return cuda::layer_norm(device_.launcher(), x.data(), weight.data(), bf16_data(y), x.numel() / cols, cols, eps);
    cuda::layer_norm(device_.launcher(), x.data(), weight.data(), y.data(), x.numel() / cols, cols, eps);
  }
  void do_rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y) override {
    OpScope scope(*this, "rms_norm");
    if (y.dtype() == DType::BF16)  // the TTT apply's normed output, read only by its output projection
      return cuda::rms_norm(device_.launcher(), x.data(), weight.data(), bf16_data(y), x.numel() / group, group, eps);
    cuda::rms_norm(device_.launcher(), x.data(), weight.data(), y.data(), x.numel() / group, group, eps);
  }
  void do_rms_norm_columns(Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight,
                           float eps) override {
    const int64_t width = x.dim(x.rank() - 1);
    if (x.numel() == 0) return;
    OpScope scope(*this, "rms_norm");
    if (x.dtype() == DType::BF16)
      return cuda::rms_norm_columns(device_.launcher(), bf16_data(x), weight.data(), x.numel() / width, width,
                                    column_offset, columns, weight.numel(), eps);
    cuda::rms_norm_columns(device_.launcher(), x.data(), weight.data(), x.numel() / width, width, column_offset,
                           columns, weight.numel(), eps);
  }
  void do_l2_normalize(Tensor& x, int64_t group, float eps) override {
    OpScope scope(*this, "l2_normalize");
    if (x.dtype() == DType::BF16)
      return cuda::l2_normalize(device_.launcher(), bf16_data(x), x.numel() / group, group, eps);
    cuda::l2_normalize(device_.launcher(), x.data(), x.numel() / group, group, eps);
  }
  void do_scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride) override {
    OpScope scope(*this, "scale_rows");
    cuda::scale_rows(device_.launcher(), x.data(), scale, x.dim(0), x.dim(1), x.dim(2), scale_batch_stride,
                     scale_row_stride);
  }

  // ---- layout
  void do_split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, Tensor& dst) override {
    const int64_t views = src.dim(0), tokens = src.dim(1), width = src.dim(2);
    OpScope scope(*this, "split_heads");
    with_storage(src, dst, [&](const auto* from, auto* to) {
      cuda::split_heads(device_.launcher(), from, to, views, tokens, width, column_offset, heads, head_dim);
    });
  }
  void do_split_heads_silu(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, float l2_eps,
                           Tensor& dst) override {
    const int64_t views = src.dim(0), tokens = src.dim(1), width = src.dim(2);
    OpScope scope(*this, "split_heads_silu");
    with_storage(src, dst, [&](const auto* from, auto* to) {
      cuda::split_heads_silu(device_.launcher(), from, to, views, tokens, width, column_offset, heads, head_dim,
                             l2_eps);
    });
  }
  void do_merge_heads(const Tensor& src, Tensor& dst) override {
    OpScope scope(*this, "merge_heads");
    if (dst.dtype() == DType::BF16)
      return cuda::merge_heads(device_.launcher(), src.data(), bf16_data(dst), src.dim(0), src.dim(1), src.dim(2),
                               src.dim(3));
    cuda::merge_heads(device_.launcher(), src.data(), dst.data(), src.dim(0), src.dim(1), src.dim(2), src.dim(3));
  }

  // ---- attention (kernels/cuda/device_attention.h)
  void do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) override {
    LACT_CHECK(v.dim(2) == q.dim(2), "attention",
               "the cuda kernel needs value dim = query dim, not " + shape_string(v.shape()) + " for q " +
                   shape_string(q.shape()));
    OpScope scope(*this, "attention");
    attention_.split_layout(q, k, v, scale, out, recording_);
  }
  void do_attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) override {
    if (qkv.dim(0) == 0 || qkv.dim(1) == 0) return;
    OpScope scope(*this, "attention");
    attention_.packed(qkv, heads, head_dim, scale, out, recording_);
  }

  // ---- convolution and pooling (kernels/cuda/conv_kernels.cuh)
  void do_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu,
                 Tensor& y) override {
    OpScope scope(*this, "conv2d");
    cuda::conv2d(device_.launcher(), x.data(), weight.data(), bias.empty() ? nullptr : bias.data(), y.data(), x.dim(0),
                 x.dim(1), x.dim(2), x.dim(3), weight.dim(0), weight.dim(2), weight.dim(3), stride, padding, relu);
  }
  void do_max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y) override {
    OpScope scope(*this, "max_pool2d");
    cuda::max_pool2d(device_.launcher(), x.data(), y.data(), x.dim(0) * x.dim(1), x.dim(2), x.dim(3), kernel, stride);
  }

  // ---- tokens
  void do_ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width, int patch,
                     Tensor& tokens) override {
    const int64_t views = static_cast<int64_t>(poses.size());
    if (views == 0) return;
    OpScope scope(*this, "ray_tokens");
    no_host_traffic("ray_tokens from host poses");
    const size_t pose_bytes = poses.size() * sizeof(RayPose);
    void* device_poses = device_.scratch(pose_bytes);
    device_.to_device(device_poses, poses.data(), pose_bytes);
    cuda::ray_tokens(device_.launcher(), static_cast<const RayPose*>(device_poses), images ? images->data() : nullptr,
                     tokens.data(), views, height, width, patch);
    device_.release(device_poses);
  }

  void do_ray_tokens(const Tensor& poses, int height, int width, int patch, Tensor& tokens) override {
    const int64_t views = poses.dim(0);
    OpScope scope(*this, "ray_tokens");
    cuda::ray_tokens(device_.launcher(), reinterpret_cast<const RayPose*>(poses.data()), nullptr, tokens.data(), views,
                     height, width, patch);
  }

  // ---- SwiGLU pieces
  void do_swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
    OpScope scope(*this, "swiglu");
    cuda::swiglu(device_.launcher(), gate.data(), up.data(), out.data(), gate.numel());
  }
  void do_swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden) override {
    OpScope scope(*this, "swiglu_backward");
    cuda::swiglu_backward(device_.launcher(), gate.data(), up.data(), dhidden.data(), gate.numel());
  }
  void do_swiglu_backward_packed(Tensor& gate_up, Tensor& dhidden, const float* scale, int64_t scale_part_stride,
                                 int64_t scale_batch_stride, int64_t scale_row_stride) override {
    OpScope scope(*this, "swiglu_backward");
    if (gate_up.dtype() == DType::BF16)
      return cuda::swiglu_backward_packed(device_.launcher(), bf16_data(gate_up), bf16_data(dhidden), scale,
                                          dhidden.dim(0), dhidden.dim(1), dhidden.dim(2), scale_part_stride,
                                          scale_batch_stride, scale_row_stride);
    cuda::swiglu_backward_packed(device_.launcher(), gate_up.data(), dhidden.data(), scale, dhidden.dim(0),
                                 dhidden.dim(1), dhidden.dim(2), scale_part_stride, scale_batch_stride,
                                 scale_row_stride);
  }
  void do_swiglu_packed(Tensor& gate_up) override {
    OpScope scope(*this, "swiglu");
    if (gate_up.dtype() == DType::BF16)
      return cuda::swiglu_packed(device_.launcher(), bf16_data(gate_up), gate_up.dim(0) * gate_up.dim(1),
                                 gate_up.dim(2) / 2);
    cuda::swiglu_packed(device_.launcher(), gate_up.data(), gate_up.dim(0) * gate_up.dim(1), gate_up.dim(2) / 2);
  }

  // ---- reductions
  std::vector<double> do_batched_dot(const Tensor& a, const Tensor& b) override {
    const int64_t batch = a.dim(0), per = batch ? a.numel() / batch : 0;
    std::vector<double> result(static_cast<size_t>(batch), 0.0);
    if (batch == 0 || per == 0) return result;
    OpScope scope(*this, "batched_dot");
    no_host_traffic("batched_dot");
    const int64_t parts = batched_dot_parts(per);
    std::vector<double> partial(static_cast<size_t>(batch * parts));
    void* device_partial = device_.scratch(partial.size() * sizeof(double));
    cuda::batched_dot(device_.launcher(), a.data(), b.data(), batch, per, static_cast<double*>(device_partial));
    device_.to_host(partial.data(), device_partial, partial.size() * sizeof(double));
    device_.release(device_partial);
    for (int64_t i = 0; i < batch; ++i)  // a fixed order: the same sum every run
      for (int64_t p = 0; p < parts; ++p) result[i] += partial[i * parts + p];
    return result;
  }
  void do_column_norms(const Tensor& w, Tensor& norms) override {
    OpScope scope(*this, "column_norms");
    cuda::column_norms(device_.launcher(), w.data(), norms.data(), w.dim(0), w.dim(1), w.dim(2));
  }
  void do_restore_column_norms(Tensor& w, const Tensor& target, float eps) override {
    OpScope scope(*this, "restore_column_norms");
    cuda::restore_column_norms(device_.launcher(), w.data(), target.data(), w.dim(0), w.dim(1), w.dim(2), eps);
  }
  void do_scale_batched(Tensor& x, const std::vector<float>& scale) override {
    const int64_t batch = x.dim(0);
    if (x.numel() == 0) return;
    OpScope scope(*this, "scale_batched");
    no_host_traffic("scale_batched");
    void* device_scale = device_.scratch(scale.size() * sizeof(float));
    device_.to_device(device_scale, scale.data(), scale.size() * sizeof(float));
    cuda::scale_batched(device_.launcher(), x.data(), static_cast<const float*>(device_scale), batch,
                        x.numel() / batch);
    device_.release(device_scale);
  }

  void no_host_traffic(const char* op) const {
    if (recording_)
      throw std::logic_error(std::string(op) + " while recording: a recording cannot move data to or from the host");
  }

  struct Timing {
    const char* op;
    size_t start, end;
  };
  // Holds the backend's lock for one op and, while profiling, brackets it with device events.
  class OpScope {
   public:
    OpScope(DeviceBackend& be, const char* op) : be_(be), lock_(be.mutex_), op_(op) {
      if (be_.profiling_) start_ = be_.device_.record_event();
    }
    ~OpScope() {
      if (be_.profiling_) be_.timings_.push_back({op_, start_, be_.device_.record_event()});
    }

   private:
    DeviceBackend& be_;
    std::lock_guard<std::recursive_mutex> lock_;
    const char* op_;
    size_t start_ = 0;
  };

  // f(src's elements, dst's elements) as pointers of their storage types (float or __nv_bfloat16): the four
  // instances of a kernel templated on both.
  template <typename F>
  static void with_storage(const Tensor& src, Tensor& dst, const F& f) {
    const bool bf16_src = src.dtype() == DType::BF16, bf16_dst = dst.dtype() == DType::BF16;
    if (bf16_src && bf16_dst) return f(bf16_data(src), bf16_data(dst));
    if (bf16_src) return f(bf16_data(src), dst.data());
    if (bf16_dst) return f(src.data(), bf16_data(dst));
    f(src.data(), dst.data());
  }
  // `count` floats rounded to bf16 into stream-ordered scratch (the caller releases it).
  void* rounded_copy(const float* src, int64_t count) {
    auto* copy = static_cast<__nv_bfloat16*>(device_.scratch(static_cast<size_t>(count) * 2));
    to_bf16(device_.launcher(), src, copy, count);
    return copy;
  }
  // The bf16 copy of a marked constant (made here on first use), or null: not marked, or first met while recording
  // (allocating is not captured; the caller stages it this time).
  const void* constant_bf16(const Tensor& t) {
    auto it = constants_.find(ConstantKey{t.raw(), t.numel()});
    if (it == constants_.end()) return nullptr;
    ConstantCopy& c = it->second;
    if (c.source.expired() || c.source.owner_before(t.storage()) || t.storage().owner_before(c.source)) {
      constants_.erase(it);  // the address now belongs to another tensor
      return nullptr;
    }
    if (!c.copy && !recording_) {
      c.copy = device_.allocate(t.numel() * 2, t.shape());
      to_bf16(device_.launcher(), t.data(), reinterpret_cast<__nv_bfloat16*>(c.copy.get()), t.numel());
    }
    return c.copy.get();
  }
  void drop_expired_constants() {
    for (auto it = constants_.begin(); it != constants_.end();)
      it = it->second.source.expired() ? constants_.erase(it) : std::next(it);
  }

  // The product in split.slices slices of the reduction (gemm_plan.h's plan_split_k): slice s covers
  // [s slice_k, (s + 1) slice_k), the last one up to k; each writes alpha op(A_s) op(B_s) into its own partial
  // [batch, m, n] (one strided-batched call over the equal slices for a single matrix, one call per slice for
  // several), then one kernel sums them in slice order and adds beta C.
  void gemm_split_k(SplitK split, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                    TypedOperand a, TypedOperand b, float beta, float* c, int64_t ldc, int64_t stride_c,
                    int64_t batch) {
    const int64_t per = batch * m * n, q = split.slice_k, slices = split.slices;
    auto* partial = static_cast<float*>(device_.scratch(static_cast<size_t>(slices * per) * sizeof(float)));
    // Slice s's operands: op(A) m x k takes columns [s q, ...), op(B) k x n rows [s q, ...).
    const int64_t a_step = transpose_a ? q * a.ld : q, b_step = transpose_b ? q : q * b.ld;
    const auto at = [](const TypedOperand& o, int64_t elements) {
      return static_cast<const char*>(o.data) + elements * dtype_bytes(o.type);
    };
    auto slice = [&](int64_t s, int64_t length, int64_t count) {
      const TypedOperand as{at(a, s * a_step), a.ld, count > 1 ? a_step : a.stride, a.type};
      const TypedOperand bs{at(b, s * b_step), b.ld, count > 1 ? b_step : b.stride, b.type};
      device_.gemm(plan_typed_gemm(transpose_a, transpose_b, m, n, length, as, bs, partial + s * per, DType::F32, n,
                                   count > 1 ? per : m * n, count > 1 ? count : batch),
                   alpha, 0.0f, precision_);
    };
    if (batch == 1) {
      slice(0, q, slices - 1);  // the equal slices as one batched product
    } else {
      for (int64_t s = 0; s + 1 < slices; ++s) slice(s, q, 1);
    }
    slice(slices - 1, k - (slices - 1) * q, 1);
    cuda::sum_slices(device_.launcher(), partial, slices, c, batch, m, n, ldc, stride_c, beta);
    device_.release(partial);
  }

  template <Activation A>
  void activation(Tensor& x, float shift) {
    OpScope scope(*this, A == Activation::Silu      ? "silu"
                         : A == Activation::Gelu    ? "gelu"
                         : A == Activation::Sigmoid ? "sigmoid"
                                                    : "softplus");
    if (x.dtype() == DType::BF16) return cuda::activation<A>(device_.launcher(), bf16_data(x), x.numel(), shift);
    cuda::activation<A>(device_.launcher(), x.data(), x.numel(), shift);
  }

  mutable Device device_;
  std::string name_;
  Precision precision_;
  DeviceAttention<Device> attention_;  // after device_, which it uses
  mutable std::recursive_mutex mutex_;
  bool profiling_ = false, recording_ = false, recording_enabled_ = true;
  bool split_k_ = split_k_from_environment();  // LACT_SPLIT_K=0: every product in one call (for comparison)
  bool bf16_activations_ = bf16_activations_from_environment();  // LACT_BF16_ACTIVATIONS=0: float32 (to compare)
  // Marked constants by address and size: the weight (weakly, to tell a reused address) and its bf16 copy.
  using ConstantKey = std::pair<const void*, int64_t>;
  struct ConstantCopy {
    std::weak_ptr<float> source;
    std::shared_ptr<float> copy;
  };
  std::map<ConstantKey, ConstantCopy> constants_;
  std::vector<Timing> timings_;
};

}  // namespace lact::cuda
