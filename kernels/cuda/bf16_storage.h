// The host side of bf16 storage on the CUDA backend (issue 51 item 3): a float's bf16 bits and back, for the
// uploads and downloads of bf16 tensors, and the LACT_BF16_ACTIVATIONS switch. Plain C++, tested on the CPU.
#pragma once

#include <cstdint>

namespace lact::cuda {

// The bf16 nearest to f, ties to even (as __float2bfloat16 and the tensor cores round); NaN stays a (quiet) NaN.
uint16_t bf16_bits(float f);
// The float a bf16 is (exact).
float bf16_value(uint16_t bits);

// LACT_BF16_ACTIVATIONS: 1 or unset, the model's activations between products are bf16 on the CUDA backend at
// --precision bf16 (Backend::activation_type); 0, float32 (as before, to compare against). Throws
// std::invalid_argument naming the variable for any other value.
bool parse_bf16_activations(const char* value);
bool bf16_activations_from_environment();

}  // namespace lact::cuda
