// Backend::split_heads_silu's test shapes and references, shared by the tests of every backend
// (tests/unit/kernels/test_ops.cpp, test_cuda_emulated.cpp, test_cuda_bf16_storage.cpp): a double-precision loop, and
// the op sequence the fused op replaces, run on the same backend.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/backend.h"

namespace lact::test {

struct HeadsCase {
  int64_t views, tokens, heads, head_dim, offset, width;
  float eps;  // < 0: no norm
};

// Views 1-2, heads 1-3, head dims 1, 7, 32, 64 and 768 (the main config's one head), token counts that leave partial
// warps and blocks, offsets past 0 with columns left over on either side, and no norm (the v third).
inline std::vector<HeadsCase> heads_cases() {
  return {
      {1, 13, 1, 768, 768, 3 * 768, 1e-5f},  // the main config's k: one head of 768 from rows of q, k, v
      {2, 11, 3, 7, 5, 3 * 21 + 9, 1e-5f},   {1, 37, 2, 64, 128, 3 * 128, 1e-5f}, {2, 5, 3, 1, 2, 12, 1e-5f},
      {1, 19, 2, 32, 64, 3 * 64 + 1, -1.0f}, {2, 3, 1, 768, 0, 2 * 768, -1.0f},
  };
}

inline Shape heads_source_shape(const HeadsCase& c) { return {c.views, c.tokens, c.width}; }
inline Shape heads_shape(const HeadsCase& c) { return {c.views, c.heads, c.tokens, c.head_dim}; }

// dst [views, heads, tokens, head_dim] from src [views, tokens, width] in double: silu, split, divided by the
// group's norm plus eps where eps >= 0.
inline std::vector<double> split_heads_silu_double(const std::vector<float>& src, const HeadsCase& c) {
  std::vector<double> out;
  for (int64_t v = 0; v < c.views; ++v)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t t = 0; t < c.tokens; ++t) {
        const size_t begin = out.size();
        double squares = 0;
        for (int64_t e = 0; e < c.head_dim; ++e) {
          const double x = src[size_t((v * c.tokens + t) * c.width + c.offset + h * c.head_dim + e)];
          out.push_back(x / (1 + std::exp(-x)));
          squares += out.back() * out.back();
        }
        if (c.eps < 0) continue;
        for (size_t i = begin; i < out.size(); ++i) out[i] /= std::sqrt(squares) + c.eps;
      }
  return out;
}

// The fused op and the sequence it replaces (silu in place on a copy of src, split_heads, l2_normalize where
// eps >= 0), on one backend from the same src of `src_type` into dsts of `dst_type` poisoned with NaN first.
struct HeadsRun {
  std::vector<float> fused, sequence;
};
inline HeadsRun run_split_heads_silu(Backend& be, const std::vector<float>& src, const HeadsCase& c, DType src_type,
                                     DType dst_type) {
  Tensor s = be.empty(heads_source_shape(c), src_type), copy = be.empty(s.shape(), src_type);
  be.upload(s, src.data());
  be.copy(copy, s);
  Tensor fused = be.empty(heads_shape(c), dst_type), sequence = be.empty(heads_shape(c), dst_type);
  be.fill(fused, std::numeric_limits<float>::quiet_NaN());
  be.fill(sequence, std::numeric_limits<float>::quiet_NaN());
  be.split_heads_silu(s, c.offset, c.heads, c.head_dim, c.eps, fused);
  be.silu(copy);
  be.split_heads(copy, c.offset, c.heads, c.head_dim, sequence);
  if (c.eps >= 0) be.l2_normalize(sequence, c.head_dim, c.eps);
  return {be.to_host(fused), be.to_host(sequence)};
}

// Equal bit for bit (no NaN left by either).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  for (float x : a)
    if (std::isnan(x)) return false;
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace lact::test
