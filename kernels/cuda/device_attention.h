// The attention ops of the GPU backend (kernels/cuda/device_backend.h) over its Device: Backend::attention and
// Backend::attention_packed at each precision and storage, through the device's fused library (cuDNN's SDPA, bf16)
// where it loads and takes the shape, else lact's own kernels (the FlashAttention-2-class one, the wmma one, the
// fp32 one), and which of them ran (attention_path). The backend holds its lock and the op's profile scope around
// every call.
#pragma once

#include <cstdio>
#include <set>
#include <string>

#include "kernels/backend.h"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/cudnn_sdpa_plan.h"

namespace lact::cuda {

// A bf16 tensor's elements (the GPU backend's ops that take bf16 storage).
inline __nv_bfloat16* bf16_data(const Tensor& t) { return static_cast<__nv_bfloat16*>(t.raw()); }

template <typename Device>
class DeviceAttention {
 public:
  DeviceAttention(Device& device, Precision precision)
      : device_(device),
        precision_(precision),
        own_kernel_(own_attention_kernel(attention_choice_from_environment())) {}

  // The most bytes one library call stages (kSdpaStagingBudgetBytes); the tests set a small one to make the
  // chunking show at small sizes.
  void set_staging_budget(int64_t bytes) { staging_budget_ = bytes; }
  // Whether a recording met a shape the library had not prepared since the last call (then it is discarded).
  bool take_abandoned() {
    const bool abandoned = abandon_recording_;
    abandon_recording_ = false;
    return abandoned;
  }
  // "cudnn 9.19.0" when the library ran every bf16 attention so far (or will: none ran yet), "own fa2 (why)" (or
  // "own wmma (why)") when our kernel did, both when some calls fell back.
  std::string path() const {
    if (precision_ != Precision::Bf16) return "own (" + precision_name(precision_) + ": the library runs bf16 only)";
    AttentionLibrary* library = library_failed_ ? nullptr : device_.attention_library();
    const std::string own_name = own_attention_name(own_kernel_);
    if (!library) return own_name + " (" + (library_failed_ ? last_fallback_ : device_.attention_unavailable()) + ")";
    if (own_attention_calls_ == 0) return library->name();
    const std::string own = own_name + " (" + last_fallback_ + ")";
    return library_attention_calls_ == 0 ? own : library->name() + " and " + own;
  }

  // Why no path can run softmax attention of this head dim here ("" when one can): over our kernels' largest, only
  // the library runs it, at bf16 where it loads and takes the head dim (a refusal of a whole shape later still falls
  // back, and the kernel then throws the same line).
  std::string head_dim_problem(int64_t head_dim) const {
    if (head_dim <= kMaxOwnAttentionHeadDim) return "";
    if (precision_ != Precision::Bf16)
      return head_dim_over_own_kernels(head_dim, "--precision " + precision_name(precision_));
    AttentionLibrary* library = library_failed_ ? nullptr : device_.attention_library();
    if (!library)
      return head_dim_over_own_kernels(head_dim, library_failed_ ? last_fallback_ : device_.attention_unavailable());
    if (const std::string problem = sdpa_shape_problem({1, 1, 1, head_dim, 0}); !problem.empty())
      return head_dim_over_own_kernels(head_dim, library->name() + " refuses it: " + problem);
    return "";
  }

  // Backend::attention: the split-heads layout (q, k, v [batch, tokens, d], value dim = query dim).
  void split_layout(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out, bool recording) {
    recording_ = recording;
    const int64_t batch = q.dim(0), queries = q.dim(1), dim = q.dim(2), keys = k.dim(1);
    // Nothing to attend, or no keys (zeros, kAttentionOfNoKeys): the library refuses an empty shape, which would be
    // said and named as a fallback.
    if (batch == 0 || queries == 0) return;
    if (precision_ != Precision::Bf16 || keys == 0)
      return cuda::attention(device_.launcher(), q.data(), k.data(), v.data(), out.data(), batch, queries, keys,
                             static_cast<int>(dim), scale, false);
    // bf16: the library's fused kernel, in chunks of the batch that bound its staging buffer; a chunk it cannot
    // run goes through our tensor-core kernel.
    const int64_t chunk = sdpa_chunk_batch({batch, queries, keys, dim}, staging_budget_);
    for (int64_t begin = 0; begin < batch; begin += chunk) {
      const int64_t count = batch - begin < chunk ? batch - begin : chunk;
      const float* qc = q.data() + begin * queries * dim;
      const float *kc = k.data() + begin * keys * dim, *vc = v.data() + begin * keys * dim;
      float* oc = out.data() + begin * queries * dim;
      if (!library_attention({count, queries, keys, dim}, qc, kc, vc, scale, oc))
        cuda::attention(device_.launcher(), qc, kc, vc, oc, count, queries, keys, static_cast<int>(dim), scale, true,
                        own_kernel_);
    }
  }

  // The attention of the packed qkv projection output (Backend::attention_packed). bf16 storage: see
  // attention_packed_bf16. float32 storage at bf16: the library's fused kernel on strided views of the staged qkv
  // (in chunks of views that bound the staging), else our FlashAttention-2-class kernel in place; what neither takes
  // (fp32 and tf32, LACT_ATTENTION=wmma, other head dims) splits the heads into scratch around the split-layout
  // kernels.
  void packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out, bool recording) {
    recording_ = recording;
    const int64_t views = qkv.dim(0), tokens = qkv.dim(1), dim = heads * head_dim;
    if (qkv.dtype() == DType::BF16) return attention_packed_bf16(qkv, heads, head_dim, scale, out);
    const int d = static_cast<int>(head_dim);
    if (precision_ != Precision::Bf16) return split_attention(qkv.data(), views, tokens, heads, d, scale, out.data());
    const int64_t chunk = sdpa_chunk_batch({views, tokens, tokens, head_dim, heads}, staging_budget_);
    for (int64_t begin = 0; begin < views; begin += chunk) {
      const int64_t count = views - begin < chunk ? views - begin : chunk;
      const float* rows = qkv.data() + begin * tokens * 3 * dim;
      float* o = out.data() + begin * tokens * dim;
      if (!library_attention({count, tokens, tokens, head_dim, heads}, rows, nullptr, nullptr, scale, o))
        own_attention_packed(rows, count, tokens, heads, d, scale, o);
    }
  }

 private:
  // Our kernels on `views` views of packed float rows: the FlashAttention-2-class one in place where it takes the
  // head dim and alignment, else through split heads.
  void own_attention_packed(const float* rows, int64_t views, int64_t tokens, int64_t heads, int d, float scale,
                            float* o) {
    const int64_t dim = heads * d;
    AttentionOperands ops;
    ops.k = rows + dim, ops.v = rows + 2 * dim;
    ops.kv_strides = {tokens * 3 * dim, d, 3 * dim};
    if (own_kernel_ == OwnAttentionKernel::Fa2 && attention_fa2_supports(d) && attention_fa2_aligned(ops) &&
        heads <= kMaxGridY)
      return cuda::attention_packed(device_.launcher(), rows, 3 * dim, 0, dim, 2 * dim, o, dim, 0, views, tokens, heads,
                                    d, scale);
    split_attention(rows, views, tokens, heads, d, scale, o);
  }
  // The packed attention on bf16 storage, a chunk of views at a time: the library on the rows in place, else our
  // FlashAttention-2-class kernel on them in place, else (LACT_ATTENTION=wmma, other head dims) our kernels on the
  // rows widened to float scratch, the output rounded back.
  void attention_packed_bf16(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) {
    const int64_t views = qkv.dim(0), tokens = qkv.dim(1), dim = heads * head_dim;
    const int d = static_cast<int>(head_dim);
    const int64_t chunk = sdpa_chunk_batch({views, tokens, tokens, head_dim, heads}, staging_budget_);
    for (int64_t begin = 0; begin < views; begin += chunk) {
      const int64_t count = views - begin < chunk ? views - begin : chunk;
      const __nv_bfloat16* rows = bf16_data(qkv) + begin * tokens * 3 * dim;
      __nv_bfloat16* o = bf16_data(out) + begin * tokens * dim;
      if (library_attention_packed({count, tokens, tokens, head_dim, heads}, rows, o, scale)) continue;
      AttentionOperandsOf<__nv_bfloat16> ops;
      ops.q = rows, ops.k = rows + dim, ops.v = rows + 2 * dim, ops.out = o;
      ops.q_strides = ops.kv_strides = {tokens * 3 * dim, head_dim, 3 * dim};
      ops.out_strides = {tokens * dim, head_dim, dim};
      if (own_kernel_ == OwnAttentionKernel::Fa2 && attention_fa2_supports(d) && attention_fa2_aligned(ops) &&
          heads <= kMaxGridY) {
        cuda::attention_packed(device_.launcher(), rows, 3 * dim, 0, dim, 2 * dim, o, dim, 0, count, tokens, heads, d,
                               scale);
        continue;
      }
      const int64_t in_elements = count * tokens * 3 * dim, out_elements = count * tokens * dim;
      auto* wide = static_cast<float*>(device_.scratch(static_cast<size_t>(in_elements + out_elements) * 4));
      from_bf16(device_.launcher(), rows, wide, in_elements);
      own_attention_packed(wide, count, tokens, heads, d, scale, wide + in_elements);
      to_bf16(device_.launcher(), wide + in_elements, o, out_elements);
      device_.release(wide);
    }
  }
  // The packed attention through split heads: q, k, v copied out to [views, heads, tokens, d] scratch, the
  // split-layout kernel (cuda::attention, bf16 at Precision::Bf16), the output merged back into out's columns. Half
  // the views at a time (one where there is one): the scratch then stays within two dim-wide rows a token, so the
  // layer's qkv, out and scratch fit the six the memory estimate counts (window_attention_kind.cpp).
  void split_attention(const float* qkv, int64_t views, int64_t tokens, int64_t heads, int d, float scale, float* out) {
    const int64_t dim = heads * d, group = views > 1 ? views / 2 : 1, elements = group * tokens * dim;
    auto* scratch = static_cast<float*>(device_.scratch(static_cast<size_t>(4 * elements) * sizeof(float)));
    float *q = scratch, *k = scratch + elements, *v = scratch + 2 * elements, *o = scratch + 3 * elements;
    for (int64_t begin = 0; begin < views; begin += group) {
      const int64_t count = views - begin < group ? views - begin : group;
      const float* rows = qkv + begin * tokens * 3 * dim;
      cuda::split_heads(device_.launcher(), rows, q, count, tokens, 3 * dim, 0, heads, d);
      cuda::split_heads(device_.launcher(), rows, k, count, tokens, 3 * dim, dim, heads, d);
      cuda::split_heads(device_.launcher(), rows, v, count, tokens, 3 * dim, 2 * dim, heads, d);
      cuda::attention(device_.launcher(), q, k, v, o, count * heads, tokens, tokens, d, scale,
                      precision_ == Precision::Bf16, own_kernel_);
      cuda::merge_heads(device_.launcher(), o, out + begin * tokens * dim, count, heads, tokens, d);
    }
    device_.release(scratch);
  }

  // The attention through the device's fused library (bf16 operands staged from the fp32 tensors, the output
  // widened back); false when it cannot run here, and our kernel runs instead. For the packed layout (shape.heads
  // > 0) `q` is the qkv rows and k, v are unused.
  bool library_attention(const SdpaShape& shape, const float* q, const float* k, const float* v, float scale,
                         float* out) {
    AttentionLibrary* library = library_for(shape);
    if (!library) return false;
    const SdpaGraphPlan plan = plan_sdpa(shape);
    const int64_t heads = shape.heads > 0 ? shape.heads : 1;
    const int64_t query_elements = shape.batch * shape.queries * shape.dim * heads;
    const int64_t key_elements = shape.batch * shape.keys * shape.dim * heads;
    auto* staging = static_cast<__nv_bfloat16*>(device_.scratch(static_cast<size_t>(plan.buffer_elements) * 2));
    if (shape.heads > 0) {  // one copy of the packed rows; Q, K and V are strided views of it
      to_bf16(device_.launcher(), q, staging, 3 * query_elements);
    } else {
      to_bf16(device_.launcher(), q, staging + plan.q.offset, query_elements);
      to_bf16(device_.launcher(), k, staging + plan.k.offset, key_elements);
      to_bf16(device_.launcher(), v, staging + plan.v.offset, key_elements);
    }
    const bool ran = library_run(*library, shape, staging + plan.q.offset, staging + plan.k.offset,
                                 staging + plan.v.offset, staging + plan.o.offset, scale);
    if (ran) from_bf16(device_.launcher(), staging + plan.o.offset, out, query_elements);
    device_.release(staging);
    return ran;
  }
  // The packed attention on bf16 storage through the library: Q, K and V are strided views of the qkv rows as
  // they are and O is written into out's rows (plan_packed_sdpa's layout), nothing staged.
  bool library_attention_packed(const SdpaShape& shape, const __nv_bfloat16* rows, __nv_bfloat16* out, float scale) {
    AttentionLibrary* library = library_for(shape);
    if (!library) return false;
    const SdpaGraphPlan plan = plan_packed_sdpa(shape.batch, shape.queries, shape.heads, shape.dim);
    return library_run(*library, shape, rows + plan.q.offset, rows + plan.k.offset, rows + plan.v.offset,
                       out + plan.o.offset, scale);
  }
  // The device's fused library ready for `shape`, or null (our kernel runs this call; why is said once).
  AttentionLibrary* library_for(const SdpaShape& shape) {
    AttentionLibrary* library = library_failed_ ? nullptr : device_.attention_library();
    std::string why;
    if (!library) return fall_back(library_failed_ ? last_fallback_ : device_.attention_unavailable()), nullptr;
    if (recording_ && !library->prepared(shape)) {
      abandon_recording_ = true;  // see end_recording; what is launched instead is discarded with the capture
      return nullptr;
    }
    if (!library->prepare(shape, &why)) return fall_back(library->name() + " refuses this shape: " + why), nullptr;
    return library;
  }
  // Runs a prepared shape on bf16 operands in device memory; false when the library fails (then it is not trusted
  // again in this process).
  bool library_run(AttentionLibrary& library, const SdpaShape& shape, const __nv_bfloat16* q, const __nv_bfloat16* k,
                   const __nv_bfloat16* v, __nv_bfloat16* o, float scale) {
    std::string why;
    const size_t workspace_bytes = library.workspace_bytes(shape);
    void* workspace = workspace_bytes ? device_.scratch(workspace_bytes) : nullptr;
    const bool ran = library.run(shape, q, k, v, o, scale, workspace, &why);
    if (workspace) device_.release(workspace);
    if (ran) {
      ++library_attention_calls_;
      return true;
    }
    library_failed_ = true;
    return fall_back(library.name() + " failed: " + why);
  }
  // Our kernel runs this call: the reason is said once on stderr (not for LACT_ATTENTION=own or wmma, which asked for
  // it).
  bool fall_back(const std::string& why) {
    ++own_attention_calls_;
    last_fallback_ = why;
    if (why != kAttentionChosenOwn && why != kAttentionChosenWmma && said_.insert(why).second)
      std::fprintf(stderr, "lact: bf16 attention through lact's own kernel: %s\n", why.c_str());
    return false;
  }

  Device& device_;
  Precision precision_;
  OwnAttentionKernel own_kernel_;
  bool recording_ = false;  // the call being recorded (a stream capture)
  // Calls through the library and through our kernel at bf16, why the last fallback happened, the reasons already
  // said, whether the library failed to run (then not used again), a recording to discard.
  int64_t library_attention_calls_ = 0, own_attention_calls_ = 0;
  std::string last_fallback_;
  std::set<std::string> said_;
  bool library_failed_ = false, abandon_recording_ = false;
  int64_t staging_budget_ = kSdpaStagingBudgetBytes;
};

}  // namespace lact::cuda
