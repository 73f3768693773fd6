// The forward passes of a kind of block module (per-view attention, the TTT layer, full attention, the MLP):
// how it loads its own weights, and its encode and render over tokens. What a kind is without running it (its
// params, tensors, state, FLOPs, scratch, products) is its description, core/module_kind.h. A new kind is its
// description in core/kinds/, one class implementing BlockModule beside its layer code and one name in
// core/kinds/kind_list.h, which both registries are built from; model, loader, state files, FLOP and memory
// models only loop.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/collective.h"
#include "core/config.h"
#include "core/model_options.h"
#include "core/module_kind.h"
#include "core/weights.h"
#include "kernels/backend.h"

namespace lact {

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

// The input tokens of a streamed encode (core/encode_stream.h): the residual stream x of every view, handed to
// a module in chunks of whole views as y = LayerNorm(x rows) (made again on every pass over them).
class ViewChunks {
 public:
  // f(the chunk's context, its y [chunk tokens, dim], its rows of the residual stream x) for every chunk in order.
  using Pass = std::function<void(const ModuleContext& chunk, const Tensor& y, Tensor& out)>;
  virtual ~ViewChunks() = default;
  // Runs f over every chunk; with `adds_output` f adds into the chunk's rows of x, which are then kept (written
  // back where the stream is spilled); without, f must leave them as they are.
  virtual void each(const Pass& f, bool adds_output) const = 0;
  virtual int64_t count() const = 0;  // chunks
};

class BlockModule {
 public:
  virtual ~BlockModule() = default;
  // The kind this forward pass implements (its description).
  virtual const ModuleKind& kind() const = 0;
  // The kind's own weights; `get(name)` uploads one of its tensors (the names of ModuleKind::tensors).
  virtual std::shared_ptr<const KindWeights> load(Backend& be, const ModuleConfig& m,
                                                  const std::function<Tensor(const std::string&)>& get) const = 0;
  // The storage type of the y it reads (the LayerNorm writes it so): the backend's activation type where only
  // products read y, which round it to that type anyway (bf16 on CUDA at bf16: the norm stores half the bytes and
  // no product rounds a copy); float32 where anything reads its floats (the TTT layer's learning rates).
  virtual DType input_type(const Backend&) const { return DType::F32; }
  // Encode over the input tokens y [tokens, dim]: returns the module's state and adds its output into `out`, the
  // residual stream's rows y was made from (a stateful module may skip that when `output_needed` is false:
  // nothing after it reads them).
  virtual ModuleState encode(const ModuleContext& ctx, const Tensor& y, Tensor& out, bool output_needed) const = 0;
  // Whether encode_streamed can take the tokens in chunks of views (its encode mixes tokens within a view only,
  // or through a sum over tokens), with these options and `tokens` input tokens in all.
  virtual bool streams(const ModuleConfig&, const ModelOptions&, int64_t /*tokens*/) const { return true; }
  // Encode over the input tokens in chunks (only where streams()): the same state and output as encode() over
  // all of them. This one: encode() on each chunk, for the kinds whose tokens only meet within a view.
  virtual ModuleState encode_streamed(const ModuleContext& ctx, const ViewChunks& chunks, bool output_needed) const;
  // Render over target tokens y, reading `state` (nullptr for stateless kinds); adds its output into `out`.
  virtual void render(const ModuleContext& ctx, const ModuleState* state, const Tensor& y, Tensor& out) const = 0;
};

// Every kind's forward pass, in the order of core/kinds/kind_list.h.
const std::vector<const BlockModule*>& all_block_modules();

// The forward pass of a kind (an internal error when none is registered for it).
const BlockModule& block_module(const ModuleKind& kind);

// Whether an encode of `tokens` input tokens (every rank's) can take its views in chunks: every module streams.
bool encode_streams(const ModelConfig& config, const ModelOptions& options, int64_t tokens);

// Runs f(begin, end) over chunks of whole views holding at most `max_tokens` tokens (at least one view).
template <typename F>
void for_view_chunks(int64_t views, int64_t tokens_per_view, int64_t max_tokens, F&& f) {
  const int64_t step = std::max<int64_t>(1, max_tokens / std::max<int64_t>(1, tokens_per_view));
  for (int64_t begin = 0; begin < views; begin += step) f(begin, std::min(views, begin + step));
}

}  // namespace lact
