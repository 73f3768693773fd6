// Softmax attention on the CPU: per batch entry, query tiles of kQueryTile rows, so the score
// scratch stays kQueryTile x tokens whatever the view size (a 512x512 view has 4096 tokens).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_backend.h"

namespace lact {

namespace {
constexpr int64_t kQueryTile = 512;
}

void CpuBackend::do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) {
  const int64_t batch = q.dim(0), queries = q.dim(1), dim = q.dim(2), keys = k.dim(1);
  const int64_t value_dim = v.dim(2);
  const int64_t tile = std::min(kQueryTile, queries);
  std::vector<float> scores(static_cast<size_t>(tile * keys));
  for (int64_t b = 0; b < batch; ++b) {
    const float* qb = q.data() + b * queries * dim;
    const float* kb = k.data() + b * keys * dim;
    const float* vb = v.data() + b * keys * value_dim;
    float* ob = out.data() + b * queries * value_dim;
    for (int64_t start = 0; start < queries; start += tile) {
      const int64_t rows = std::min(tile, queries - start);
      fp32_gemm(false, true, rows, keys, dim, scale, {qb + start * dim, dim, 0}, {kb, dim, 0}, 0.0f, scores.data(),
                keys, 0, 1);
#pragma omp parallel for schedule(static) if (rows * keys > (1 << 14))
      for (int64_t r = 0; r < rows; ++r) {
        float* s = scores.data() + r * keys;
        const float peak = *std::max_element(s, s + keys);
        double sum = 0.0;
        for (int64_t j = 0; j < keys; ++j) {
          s[j] = std::exp(s[j] - peak);
          sum += s[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < keys; ++j) s[j] *= inv;
      }
      fp32_gemm(false, false, rows, value_dim, keys, 1.0f, {scores.data(), keys, 0}, {vb, value_dim, 0}, 0.0f,
                ob + start * value_dim, value_dim, 0, 1);
    }
  }
}

}  // namespace lact
