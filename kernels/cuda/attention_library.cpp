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

std::string head_dim_over_own_kernels(int64_t head_dim, const std::string& here) {
  return "attention: head dim " + std::to_string(head_dim) + " is over " + std::to_string(kMaxOwnAttentionHeadDim) +
         ", the most lact's own CUDA kernels take; only cuDNN's fused attention at --precision bf16 runs it (head "
         "dims that are multiples of 8, up to 256), or --device cpu" +
         (here.empty() ? "" : " (here: " + here + ")");
}

std::string attention_head_dim_problem(const Backend& backend, int64_t head_dim) {
  const auto* source = dynamic_cast<const AttentionPathSource*>(&backend);
  return source ? source->attention_head_dim_problem(head_dim) : "";
}

void check_attention_head_dim(const Backend& backend, int64_t head_dim) {
  if (const std::string problem = attention_head_dim_problem(backend, head_dim); !problem.empty())
    throw std::invalid_argument(problem);
}

std::string attention_path(const Backend& backend) {
  const auto* source = dynamic_cast<const AttentionPathSource*>(&backend);
  return source ? source->attention_path() : "cpu";
}

}  // namespace lact::cuda
