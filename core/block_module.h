// One kind of block module (per-view attention, the TTT layer, full attention, the MLP) and everything the
// engine does with it: its config params, its tensors, its encode and render passes, the scene state it
// keeps, its FLOPs and its scratch memory. A new kind is one class implementing BlockModule plus one line in
// the registry (core/block_module.cpp); model, loader, state files, FLOP and memory models only loop.
#pragma once

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/collective.h"
#include "core/config.h"
#include "core/model_options.h"
#include "core/weights.h"
#include "kernels/backend.h"

namespace lact {

using TensorList = std::vector<std::pair<std::string, Shape>>;

// The scene state one module keeps (its updated fast weights, or a KV cache): named tensors, saved under the
// module's official key prefix.
struct ModuleState {
  std::vector<std::pair<std::string, Tensor>> tensors;
  const Tensor& at(const std::string& name) const;  // throws lact::Error when absent
  int64_t floats() const;
};

// What a module's forward pass sees besides its input tokens.
struct ModuleContext {
  Backend& be;
  const ModuleConfig& config;
  const ModuleWeights& weights;
  const ModelOptions& options;
  int64_t views;  // the tokens are `views` views of equal size, view-major
  // Encode across ranks: these tokens are this rank's share of the input views; a module that mixes tokens
  // across views exchanges what it needs through this (null: one process, or render).
  Collective* collective = nullptr;
};

class BlockModule {
 public:
  virtual ~BlockModule() = default;
  virtual ModuleKind kind() const = 0;
  // The official class name without its module ("SelfAttention", "FastWeightGluMLPMultihead", ...).
  virtual const char* class_name() const = 0;
  // One line for `lact info`.
  virtual std::string describe(const ModelConfig& c, const ModuleConfig& m) const = 0;
  // Reads this kind's params into m. Every key it does not implement is refused, never ignored.
  virtual void parse(const nlohmann::json& params, int dim, ModuleConfig& m, const std::string& where) const = 0;
  // Tensor names after the module's key prefix ("blocks.{l}.module_list.{j}.") besides "ln.weight".
  virtual TensorList tensors(const ModelConfig& c, const ModuleConfig& m) const = 0;
  // Fills the fields of w this kind uses; `get(name)` uploads one of its tensors.
  virtual void load(Backend& be, const ModuleConfig& m, const std::function<Tensor(const std::string&)>& get,
                    ModuleWeights& w) const = 0;
  // The tensors an encode leaves in the scene state, for `input_tokens` input tokens (none: stateless).
  virtual TensorList state_tensors(const ModelConfig&, const ModuleConfig&, int64_t /*input_tokens*/) const {
    return {};
  }
  virtual bool stateful() const { return false; }
  // Encode over the input tokens y [tokens, dim]: returns the module's state and writes its output into `out`
  // (a stateful module may skip that when `output_needed` is false: nothing after it reads it).
  virtual ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool output_needed) const = 0;
  // Render over target tokens y, reading `state` (nullptr for stateless kinds).
  virtual void render(const ModuleContext& ctx, const ModuleState* state, const Tensor& y, Tensor& out) const = 0;
  // Matrix-product FLOPs per layer (multiply-adds as 2).
  virtual double encode_flops(const ModelConfig& c, const ModuleConfig& m, double tokens,
                              double tokens_per_view) const = 0;
  virtual double render_flops(const ModelConfig& c, const ModuleConfig& m, double tokens_per_view,
                              double input_tokens) const = 0;
  // Floats of scratch at this module's peak during encode, besides the token buffers and the state; `chunk`
  // is the tokens of one chunk of whole views that token-wise work runs on.
  virtual double encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions& o,
                                       double tokens, double per_view, double chunk) const = 0;
};

// The implementation of a kind, and the kind of an official class name (nullptr when unknown).
const BlockModule& block_module(ModuleKind kind);
const BlockModule* block_module_by_class(const std::string& class_name);
std::string known_module_classes();

// Refuses any key of `params` not in `known` (one line naming the key and the module).
void refuse_unknown_params(const nlohmann::json& params, const std::vector<std::string>& known,
                           const std::string& module, const std::string& where);

// Runs f(begin, end) over chunks of whole views holding at most `max_tokens` tokens (at least one view).
template <typename F>
void for_view_chunks(int64_t views, int64_t tokens_per_view, int64_t max_tokens, F&& f) {
  const int64_t step = std::max<int64_t>(1, max_tokens / std::max<int64_t>(1, tokens_per_view));
  for (int64_t begin = 0; begin < views; begin += step) f(begin, std::min(views, begin + step));
}

// The kinds (each defined beside its layer code).
const BlockModule& window_attention_module();
const BlockModule& fast_weight_ttt_module();
const BlockModule& global_attention_module();
const BlockModule& mlp_module();

}  // namespace lact
