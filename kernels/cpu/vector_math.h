// exp and erf in plain float arithmetic the compiler vectorizes (libm's expf and erff are one call per value):
// softmax, SiLU, sigmoid and GELU over every activation. Accurate to float precision where they are used
// (tests/unit/kernels/test_ops.cpp holds each op to a double-precision loop).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

// Built for AVX-512, AVX2 and the baseline, the one the CPU has chosen at load (the default build targets x86-64
// without -march=native). A function that takes spans of values carries it; the inline math below is compiled
// into each clone. The files that include this one are compiled with -fno-trapping-math (kernels/CMakeLists.txt):
// with trapping math GCC keeps the comparisons below (the clamps, the signs) as branches, and a loop with a
// branch is not vectorized: GELU over 512 x 3072 values then took 4.9 ms on 2 threads instead of 0.57.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LACT_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LACT_VECTOR_CLONES
#endif

namespace lact::vector_math {

// exp(x) for x in [-87, 88] (clamped there: below, the result is 1.6e-38 instead of a subnormal or 0; above,
// 1.65e38 instead of infinity; NaN stays NaN, so a broken input still reaches the non-finite checks). x = n ln2 + r
// with |r| <= ln2 / 2; exp(r) by its Taylor series to r^7 (relative error below 6e-9 there), times 2^n built in the
// exponent bits.
// `value` where it is NaN, else `result`, selected with integer masks: a float select (value == value ? ...) is
// compiled as a branch in the AVX2 and AVX-512 clones, and a branch stops the loop from being vectorized.
inline float keep_nan(float value, float result) {
  int32_t value_bits, result_bits;
  std::memcpy(&value_bits, &value, 4);
  std::memcpy(&result_bits, &result, 4);
  const int32_t nan_mask = -static_cast<int32_t>((value_bits & 0x7fffffff) > 0x7f800000);
  const int32_t bits = (result_bits & ~nan_mask) | (value_bits & nan_mask);
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

inline float exp(float value) {
  // Clamped by comparisons that send NaN to -87, so that no NaN is ever converted to an integer (undefined); the
  // NaN itself is returned at the end.
  const float x = value > -87.0f ? (value < 88.0f ? value : 88.0f) : -87.0f;
  // n = round(x / ln2) as trunc(x / ln2 +- 0.5) (a conversion every SIMD width has; floor is not)
  const float half = x < 0.0f ? -0.5f : 0.5f;
  const float n = static_cast<float>(static_cast<int32_t>(x * 1.44269504f + half));
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 in two parts: n * hi is exact
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return keep_nan(value, p * scale);
}

// erf(x) (Abramowitz and Stegun 7.1.26: 1 - t (a1 + t (a2 + ...)) exp(-x^2) with t = 1 / (1 + p |x|), odd in x):
// absolute error 5.3e-7 in float arithmetic (the formula's own bound is 1.5e-7). GELU uses it as 1 + erf, where
// the absolute error is what counts: GELU is within 2.6e-7 of the double-precision value (relative, or absolute
// below 1), SiLU within 1.5e-7, exp within 1e-7 relative (measured over every float in range, step 1e-5).
inline float erf(float x) {
  const float a = std::min(x < 0.0f ? -x : x, 10.0f);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const float y = 1.0f - poly * t * exp(-a * a);
  return x < 0.0f ? -y : y;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }
inline float gelu(float x) { return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f)); }

// The sum over j < n of term(j) in double over eight interleaved partial sums (each lane its own sequence, so
// the compiler vectorizes it without reordering any one sum), added together at the end. Inlined into each
// clone that calls it.
template <class Term>
inline double lane_sum(int64_t n, const Term& term) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += term(j + l);
  double sum = 0.0;
  for (; j < n; ++j) sum += term(j);
  for (int l = 0; l < kLanes; ++l) sum += lane[l];
  return sum;
}

}  // namespace lact::vector_math
