// Two [rows, cols] matrices side by side as one [rows, 2 cols] (the product with [W0|W2]): the kernel tests'
// reference for the packed SwiGLU ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lact::test {

inline std::vector<float> side_by_side(const std::vector<float>& a, const std::vector<float>& b, int64_t cols) {
  std::vector<float> packed;
  for (size_t at = 0; at < a.size(); at += static_cast<size_t>(cols)) {
    packed.insert(packed.end(), a.begin() + at, a.begin() + at + cols);
    packed.insert(packed.end(), b.begin() + at, b.begin() + at + cols);
  }
  return packed;
}

}  // namespace lact::test
