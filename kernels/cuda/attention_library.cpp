#include "kernels/cuda/attention_library.h"

#include <cstdlib>
#include <stdexcept>

#include "kernels/backend.h"

namespace lact::cuda {

AttentionChoice parse_attention_choice(const char* value) {
  const std::string text = value ? value : "";
  if (text.empty()) return AttentionChoice::Auto;
  if (text == "cudnn") return AttentionChoice::Cudnn;
  if (text == "own") return AttentionChoice::Own;
  if (text == "wmma") return AttentionChoice::Wmma;  // the older kernel, for comparison (not advertised below)
  throw std::invalid_argument("LACT_ATTENTION: '" + text + "' is not cudnn or own (unset: cudnn where it loads)");
}

AttentionChoice attention_choice_from_environment() { return parse_attention_choice(std::getenv("LACT_ATTENTION")); }

std::string attention_path(const Backend& backend) {
  const auto* source = dynamic_cast<const AttentionPathSource*>(&backend);
  return source ? source->attention_path() : "cpu";
}

}  // namespace lact::cuda
