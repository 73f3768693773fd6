#include "kernels/cuda/bf16_storage.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cuda/gemm_plan.h"

namespace lact::cuda {

uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: keep it quiet
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even (overflow carries into infinity)
  return static_cast<uint16_t>(u >> 16);
}

float bf16_value(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool parse_bf16_activations(const char* value) {
  return parse_switch("LACT_BF16_ACTIVATIONS", value, "bf16 activations at --precision bf16");
}

bool bf16_activations_from_environment() { return parse_bf16_activations(std::getenv("LACT_BF16_ACTIVATIONS")); }

}  // namespace lact::cuda
