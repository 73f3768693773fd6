// What the cuDNN SDPA graph is made of, as pure functions of the shape (no cuDNN, no device): the Q, K, V and O
// tensor descriptors' dims, strides and unique ids, where each operand sits in the bf16 staging buffer, the shapes
// cuDNN's fused kernel takes, and the library versions that have it. cudnn_sdpa.cpp builds the graph from these;
// tests/unit/kernels/test_cudnn_plan.cpp checks them by hand, where no GPU exists.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/attention_library.h"

namespace lact::cuda {

// One operand as cuDNN's 4-D tensor descriptor sees it: dims [batch, heads, tokens, head_dim] with strides in
// elements, and where its first element sits, in elements from the buffer it is a view of.
struct SdpaTensorPlan {
  int64_t uid = 0;
  std::array<int64_t, 4> dims{}, strides{};
  int64_t offset = 0;
};

// The graph's tensors; the scale is a by-value float [1, 1, 1, 1] with its own uid.
struct SdpaGraphPlan {
  SdpaTensorPlan q, k, v, o;
  int64_t scale_uid = 0;
  int64_t buffer_elements = 0;  // the bf16 elements the buffer the operands are views of holds
};

constexpr int64_t kSdpaQueryUid = 1, kSdpaKeyUid = 2, kSdpaValueUid = 3, kSdpaOutputUid = 4, kSdpaScaleUid = 5;
// Each staged operand starts on a 256-byte boundary (cuDNN asks 16; the pool's blocks start on 256).
constexpr int64_t kSdpaStagingAlignElements = 128;

// The backend's layout: q, k, v, out each [batch, tokens, dim] contiguous, staged one after the other (each
// aligned) in one bf16 buffer; cuDNN sees each as [batch, 1 head, tokens, dim].
SdpaGraphPlan plan_staged_sdpa(const SdpaShape& shape);

// The batch entries one library call takes, so that its bf16 staging (plan_staged_sdpa's buffer) stays within
// `budget_bytes` (at least 1): 48 views x 12 heads at 4096 tokens would otherwise stage 1.2 GB, which the memory
// estimate does not count. Every chunk but the last has the same shape, so two plans serve a call. Either layout
// (plan_sdpa's buffer).
constexpr int64_t kSdpaStagingBudgetBytes = int64_t(128) << 20;
int64_t sdpa_chunk_batch(const SdpaShape& shape, int64_t budget_bytes);

// The layout of the attention layer's own tensors, for a caller that hands the packed projection output over:
// Q, K and V as strided views of qkv [views, tokens, 3 * heads * head_dim] (columns q | k | v, head-major inside
// each) and O written straight into [views, tokens, heads * head_dim], so no head split or merge is needed.
// Offsets count from qkv for Q, K, V and from the output for O; buffer_elements is qkv's size.
SdpaGraphPlan plan_packed_sdpa(int64_t views, int64_t tokens, int64_t heads, int64_t head_dim);

// The packed layout staged: plan_packed_sdpa's Q, K, V in the bf16 copy of qkv at the buffer's start, O after it
// (aligned); buffer_elements counts both. For a shape with heads > 0 (batch = views, queries = keys = tokens).
SdpaGraphPlan plan_staged_packed_sdpa(const SdpaShape& shape);
// The graph of either layout, offsets within one staging buffer: plan_staged_packed_sdpa for heads > 0, else
// plan_staged_sdpa.
SdpaGraphPlan plan_sdpa(const SdpaShape& shape);

// Why cuDNN's fused SDPA cannot take this shape ("" when it can): head dims that are not a multiple of 8 or
// over 256, an empty shape, extents past what its 32-bit indexing takes.
std::string sdpa_shape_problem(const SdpaShape& shape);

// cudnnGetVersion()'s number as text: 91900 -> "9.19.0" (cuDNN 8's 8907 -> "8.9.7").
std::string cudnn_version_text(size_t version);
// The first version with CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR.
constexpr size_t kCudnnFirstSdpaVersion = 91300;
// Why a library of this version cannot run the SDPA graph ("" when it can).
std::string cudnn_version_problem(size_t version);

}  // namespace lact::cuda
