#include "pipeline/backend_environment.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/bf16_storage.h"
#include "kernels/cuda/gemm_plan.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

namespace {

// The parser's own refusal of `name`'s value as an Error. Every valid value is short, so the first 40 bytes
// decide as the whole value would, and the line stays one line.
template <typename Parse>
void check_backend_variable(const char* name, Parse parse) {
  const char* value = std::getenv(name);
  if (!value) return;
  const std::string shown = std::string(value).substr(0, 40);
  try {
    parse(shown.c_str());
  } catch (const std::invalid_argument& e) {
    throw Error(terminal_text(e.what()));
  }
}

}  // namespace

void check_backend_environment() {
  check_backend_variable("LACT_ATTENTION", cuda::parse_attention_choice);
  check_backend_variable("LACT_SPLIT_K", cuda::parse_split_k);
  check_backend_variable("LACT_BF16_ACTIVATIONS", cuda::parse_bf16_activations);
}

}  // namespace lact
