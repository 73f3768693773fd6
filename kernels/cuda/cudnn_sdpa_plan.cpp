#include "kernels/cuda/cudnn_sdpa_plan.h"

namespace lact::cuda {

namespace {

int64_t aligned(int64_t elements) {
  return (elements + kSdpaStagingAlignElements - 1) / kSdpaStagingAlignElements * kSdpaStagingAlignElements;
}

// [views, heads, tokens, head_dim] with the given strides between views and between tokens; heads sit side by
// side (head_dim apart) inside a token's row.
SdpaTensorPlan strided(int64_t uid, int64_t views, int64_t heads, int64_t tokens, int64_t head_dim, int64_t view_stride,
                       int64_t token_stride, int64_t offset) {
  SdpaTensorPlan t;
  t.uid = uid;
  t.dims = {views, heads, tokens, head_dim};
  t.strides = {view_stride, head_dim, token_stride, 1};
  t.offset = offset;
  return t;
}

}  // namespace

SdpaGraphPlan plan_staged_sdpa(const SdpaShape& s) {
  const int64_t query_elements = s.batch * s.queries * s.dim, key_elements = s.batch * s.keys * s.dim;
  SdpaGraphPlan p;
  p.q = strided(kSdpaQueryUid, s.batch, 1, s.queries, s.dim, s.queries * s.dim, s.dim, 0);
  p.k = strided(kSdpaKeyUid, s.batch, 1, s.keys, s.dim, s.keys * s.dim, s.dim, aligned(query_elements));
  p.v = strided(kSdpaValueUid, s.batch, 1, s.keys, s.dim, s.keys * s.dim, s.dim, p.k.offset + aligned(key_elements));
  p.o = strided(kSdpaOutputUid, s.batch, 1, s.queries, s.dim, s.queries * s.dim, s.dim,
                p.v.offset + aligned(key_elements));
  p.scale_uid = kSdpaScaleUid;
  p.buffer_elements = p.o.offset + aligned(query_elements);
  return p;
}

int64_t sdpa_chunk_batch(const SdpaShape& s, int64_t budget_bytes) {
  if (s.batch <= 0) return 1;
  // One batch entry's q, k, v and out in bf16; the alignment padding (under 1 KiB in all) takes a step or two off.
  const int64_t heads = s.heads > 0 ? s.heads : 1;
  const int64_t per_entry = 2 * heads * (2 * s.queries * s.dim + 2 * s.keys * s.dim);
  int64_t chunk = budget_bytes / (per_entry > 0 ? per_entry : 1);
  chunk = chunk < 1 ? 1 : (chunk > s.batch ? s.batch : chunk);
  SdpaShape part = s;
  for (part.batch = chunk; part.batch > 1 && plan_sdpa(part).buffer_elements * 2 > budget_bytes;) --part.batch;
  return part.batch;
}

SdpaGraphPlan plan_packed_sdpa(int64_t views, int64_t tokens, int64_t heads, int64_t head_dim) {
  const int64_t width = heads * head_dim, row = 3 * width;
  SdpaGraphPlan p;
  p.q = strided(kSdpaQueryUid, views, heads, tokens, head_dim, tokens * row, row, 0);
  p.k = strided(kSdpaKeyUid, views, heads, tokens, head_dim, tokens * row, row, width);
  p.v = strided(kSdpaValueUid, views, heads, tokens, head_dim, tokens * row, row, 2 * width);
  p.o = strided(kSdpaOutputUid, views, heads, tokens, head_dim, tokens * width, width, 0);
  p.scale_uid = kSdpaScaleUid;
  p.buffer_elements = views * tokens * row;
  return p;
}

SdpaGraphPlan plan_staged_packed_sdpa(const SdpaShape& s) {
  SdpaGraphPlan p = plan_packed_sdpa(s.batch, s.queries, s.heads, s.dim);
  p.o.offset = aligned(p.buffer_elements);
  p.buffer_elements = p.o.offset + aligned(s.batch * s.queries * s.heads * s.dim);
  return p;
}

SdpaGraphPlan plan_sdpa(const SdpaShape& s) { return s.heads > 0 ? plan_staged_packed_sdpa(s) : plan_staged_sdpa(s); }

std::string sdpa_shape_problem(const SdpaShape& s) {
  if (s.batch <= 0 || s.queries <= 0 || s.keys <= 0 || s.dim <= 0) return "an empty attention";
  if (s.heads > 0 && s.queries != s.keys) return "a packed attention with queries and keys of different counts";
  if (s.dim % 8 != 0) return "head dim " + std::to_string(s.dim) + " is not a multiple of 8";
  if (s.dim > 256) return "head dim " + std::to_string(s.dim) + " is over 256";
  constexpr int64_t kMaxInt32 = 2147483647;
  const int64_t row = s.heads > 0 ? 3 * s.heads : 1;  // the packed operands' extent is qkv's
  if (s.batch * s.queries * s.dim * row > kMaxInt32 || s.batch * s.keys * s.dim * row > kMaxInt32)
    return "more than 2^31 elements in one operand";
  return "";
}

std::string cudnn_version_text(size_t version) {
  if (version < 10000)  // cuDNN 8 and older counted the major version in thousands
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 100) + "." +
           std::to_string(version % 100);
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

std::string cudnn_version_problem(size_t version) {
  if (version >= kCudnnFirstSdpaVersion) return "";
  return "cuDNN " + cudnn_version_text(version) + " is older than " + cudnn_version_text(kCudnnFirstSdpaVersion) +
         ", the first with the fused SDPA operation";
}

}  // namespace lact::cuda
