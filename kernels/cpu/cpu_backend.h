// The CPU backend: oneDNN (or OpenBLAS) for matrix products, OpenMP loops for the rest. The reference backend.
#pragma once

#include <atomic>
#include <memory>

#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cpu/bf16_constants.h"
#include "kernels/cpu/block_pool.h"
#include "kernels/cpu/cpu_conv.h"
#include "kernels/cpu/dnnl_gemm.h"
#include "kernels/cpu/op_profiler.h"

namespace lact {

class CpuBackend : public Backend {
 public:
  // Precision::Bf16: matrix products through oneDNN with bf16 operands (kernels/cpu/dnnl_gemm.h). fp32 products
  // run on `fp32_library` (Auto: oneDNN where the build has it, else OpenBLAS).
  explicit CpuBackend(int threads, Precision precision = Precision::Fp32,
                      CpuGemmLibrary fp32_library = CpuGemmLibrary::Auto);
  std::string name() const override { return "cpu"; }
  Precision precision() const override { return precision_; }
  void set_threads(int threads) override;
  std::string device_description() const override;
  int64_t available_memory() const override;
  int64_t allocated_memory() const override { return allocated_->load(); }
  int64_t peak_memory() const override { return peak_->load(); }
  void reset_peak_memory() override { peak_->store(allocated_->load()); }
  void release_held_memory() const override { pool_->release_all(); }
  // The most alive and held together now (the pool's high-water mark, which only grows): the render memory check
  // reads whether a render's first layer can keep the blocks before it (pipeline/memory_check.cpp).
  int64_t held_memory_bound() const { return high_water_->load(); }
  void expect_growth(int64_t bytes) override;
  void hold_step_blocks() override;
  // Blocks of BlockPool::kSmallest bytes and more allocated afresh, not reused from the pool, since construction.
  int64_t fresh_large_blocks() const { return fresh_large_blocks_->load(); }
  bool start_profiling() override {
    profiler_->start();
    return true;
  }
  std::vector<OpProfile> stop_profiling() override { return profiler_->stop(); }

  Tensor adopt_host(const Shape& shape, std::shared_ptr<float> storage) override;
  void mark_constant(const Tensor& t) override;

 private:
  // The ops (Backend's public ops have checked the operands).
  Tensor do_empty(const Shape& shape, DType dtype) override;
  void do_upload(Tensor& dst, const float* host) override;
  void do_download(const Tensor& src, float* host) override;
  void do_copy(Tensor& dst, const Tensor& src) override;
  void do_fill(Tensor& t, float value) override;
  void do_copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block,
                      int64_t count) override;
  void do_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
               MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch) override;
  void do_add(Tensor& y, const Tensor& x) override;
  void do_axpby(Tensor& y, float a, const Tensor& x, float b) override;
  void do_add_scaled_identity(Tensor& y, float a) override;
  void do_silu(Tensor& x) override;
  void do_gelu(Tensor& x) override;
  void do_sigmoid(Tensor& x) override;
  void do_softplus(Tensor& x, float shift) override;
  void do_add_bias(Tensor& x, const Tensor& bias) override;
  void do_layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override;
  void do_rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y) override;
  void do_rms_norm_columns(Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight, float eps) override;
  void do_l2_normalize(Tensor& x, int64_t group, float eps) override;
  void do_scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride) override;
  void do_split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, Tensor& dst) override;
  void do_split_heads_silu(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, float l2_eps,
                           Tensor& dst) override;
  void do_merge_heads(const Tensor& src, Tensor& dst) override;
  void do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) override;
  void do_attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) override;
  // cpu_attention.cpp: the attention of `batch` entries whose operands entry(b) names (`strided`: rows that may
  // not be contiguous, copied per work item).
  template <typename Entry>
  void strided_attention(int64_t batch, int64_t queries, int64_t keys, int64_t dim, int64_t value_dim, float scale,
                         bool strided, const Entry& entry);
  void do_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu,
                 Tensor& y) override;
  void do_max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y) override;
  void do_ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width, int patch,
                     Tensor& tokens) override;
  void do_ray_tokens(const Tensor& poses, int height, int width, int patch, Tensor& tokens) override;
  void do_swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void do_swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden) override;
  void do_swiglu_backward_packed(Tensor& gate_up, Tensor& dhidden, const float* scale, int64_t scale_part_stride,
                                 int64_t scale_batch_stride, int64_t scale_row_stride) override;
  void do_swiglu_packed(Tensor& gate_up) override;
  std::vector<double> do_batched_dot(const Tensor& a, const Tensor& b) override;
  void do_column_norms(const Tensor& w, Tensor& norms) override;
  void do_restore_column_norms(Tensor& w, const Tensor& target, float eps) override;
  void do_scale_batched(Tensor& x, const std::vector<float>& scale) override;

  // Shared with the tensors' deleters, which may run after the backend is gone.
  std::shared_ptr<std::atomic<int64_t>> allocated_ = std::make_shared<std::atomic<int64_t>>(0);
  std::shared_ptr<std::atomic<int64_t>> peak_ = std::make_shared<std::atomic<int64_t>>(0);
  // The most ever allocated at once (never reset): freed blocks are held for reuse up to it (block_pool.h).
  std::shared_ptr<std::atomic<int64_t>> high_water_ = std::make_shared<std::atomic<int64_t>>(0);
  // The step since expect_growth / hold_step_blocks: the most alive in it, what was alive at its start, and the
  // bytes of the pool's sizes it allocated.
  std::shared_ptr<std::atomic<int64_t>> step_peak_ = std::make_shared<std::atomic<int64_t>>(0);
  std::atomic<int64_t> step_start_{0}, step_allocated_{0};
  std::shared_ptr<std::atomic<int64_t>> fresh_large_blocks_ = std::make_shared<std::atomic<int64_t>>(0);
  std::shared_ptr<BlockPool> pool_ = std::make_shared<BlockPool>();
  Precision precision_ = Precision::Fp32;
  std::unique_ptr<DnnlGemm> dnnl_fp32_;            // fp32 products through oneDNN (null: OpenBLAS)
  std::unique_ptr<DnnlGemm> dnnl_bf16_;            // with Precision::Bf16
  std::unique_ptr<Bf16Constants> bf16_constants_;  // with Precision::Bf16: the weights, converted once
  std::unique_ptr<CpuConvolutions> convolutions_ = std::make_unique<CpuConvolutions>();  // LPIPS (core/lpips.h)
  std::unique_ptr<OpProfiler> profiler_ = std::make_unique<OpProfiler>();                // lact bench --profile

  // One fp32 product on whichever library this backend uses for fp32 (attention's scores at every precision).
  void fp32_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
                 MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch);
};

}  // namespace lact
