// A backend that implements only Backend's do_ hooks, as a new backend would, and computes nothing: each hook
// appends its name to `log` (empty also allocates zeroed host memory, so tensors live on this backend). It holds
// no operand check of its own, so what it refuses, Backend's public ops refused
// (tests/unit/kernels/test_backend_checks.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace lact::test {

class HookLogBackend final : public Backend {
 public:
  std::vector<std::string> log;  // the hooks run, in order

  std::string name() const override { return "hook-log"; }
  void set_threads(int) override {}
  std::string device_description() const override { return "hook log (computes nothing)"; }
  int64_t available_memory() const override { return -1; }
  bool stores_bf16() const override { return true; }  // so the bf16 ops' checks are reached too

 private:
  void note(const char* hook) { log.emplace_back(hook); }

  Tensor do_empty(const Shape& shape, DType dtype) override {
    note("empty");
    const int64_t count = shape_numel(shape);  // float-sized elements: enough for bf16 ones too
    std::shared_ptr<float> storage(count ? new float[count]() : nullptr, std::default_delete<float[]>());
    return Tensor(storage, storage.get(), shape, this, dtype);
  }
  void do_upload(Tensor&, const float*) override { note("upload"); }
  void do_download(const Tensor&, float*) override { note("download"); }
  void do_copy(Tensor&, const Tensor&) override { note("copy"); }
  void do_fill(Tensor&, float) override { note("fill"); }
  void do_copy_blocks(float*, int64_t, const float*, int64_t, int64_t, int64_t) override { note("copy_blocks"); }
  void do_gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, Bf16Operand, Bf16Operand, float, void*, DType,
                    int64_t, int64_t, int64_t) override {
    note("gemm_bf16");
  }
  void do_linear_bf16(const Tensor&, const Tensor&, Tensor&, float) override { note("linear_bf16"); }
  void do_gemm(bool, bool, int64_t, int64_t, int64_t, float, MatrixOperand, MatrixOperand, float, float*, int64_t,
               int64_t, int64_t) override {
    note("gemm");
  }
  void do_add(Tensor&, const Tensor&) override { note("add"); }
  void do_axpby(Tensor&, float, const Tensor&, float) override { note("axpby"); }
  void do_add_scaled_identity(Tensor&, float) override { note("add_scaled_identity"); }
  void do_silu(Tensor&) override { note("silu"); }
  void do_gelu(Tensor&) override { note("gelu"); }
  void do_sigmoid(Tensor&) override { note("sigmoid"); }
  void do_softplus(Tensor&, float) override { note("softplus"); }
  void do_add_bias(Tensor&, const Tensor&) override { note("add_bias"); }
  void do_layer_norm(const Tensor&, const Tensor&, float, Tensor&) override { note("layer_norm"); }
  void do_rms_norm(const Tensor&, const Tensor&, int64_t, float, Tensor&) override { note("rms_norm"); }
  void do_rms_norm_columns(Tensor&, int64_t, int64_t, const Tensor&, float) override { note("rms_norm_columns"); }
  void do_l2_normalize(Tensor&, int64_t, float) override { note("l2_normalize"); }
  void do_scale_rows(Tensor&, const float*, int64_t, int64_t) override { note("scale_rows"); }
  void do_split_heads(const Tensor&, int64_t, int64_t, int64_t, Tensor&) override { note("split_heads"); }
  void do_split_heads_silu(const Tensor&, int64_t, int64_t, int64_t, float, Tensor&) override {
    note("split_heads_silu");
  }
  void do_merge_heads(const Tensor&, Tensor&) override { note("merge_heads"); }
  void do_attention(const Tensor&, const Tensor&, const Tensor&, float, Tensor&) override { note("attention"); }
  void do_attention_packed(const Tensor&, int64_t, int64_t, float, Tensor&) override { note("attention_packed"); }
  void do_conv2d(const Tensor&, const Tensor&, const Tensor&, int, int, bool, Tensor&) override { note("conv2d"); }
  void do_max_pool2d(const Tensor&, int, int, Tensor&) override { note("max_pool2d"); }
  void do_ray_tokens(const std::vector<RayPose>&, const Tensor*, int, int, int, Tensor&) override {
    note("ray_tokens(host poses)");
  }
  void do_ray_tokens(const Tensor&, int, int, int, Tensor&) override { note("ray_tokens(poses tensor)"); }
  void do_swiglu(const Tensor&, const Tensor&, Tensor&) override { note("swiglu"); }
  void do_swiglu_backward(Tensor&, Tensor&, Tensor&) override { note("swiglu_backward"); }
  void do_swiglu_backward_packed(Tensor&, Tensor&, const float*, int64_t, int64_t, int64_t) override {
    note("swiglu_backward_packed");
  }
  void do_swiglu_packed(Tensor&) override { note("swiglu_packed"); }
  std::vector<double> do_batched_dot(const Tensor&, const Tensor&) override {
    note("batched_dot");
    return {};
  }
  void do_column_norms(const Tensor&, Tensor&) override { note("column_norms"); }
  void do_restore_column_norms(Tensor&, const Tensor&, float) override { note("restore_column_norms"); }
  void do_scale_batched(Tensor&, const std::vector<float>&) override { note("scale_batched"); }
};

}  // namespace lact::test
