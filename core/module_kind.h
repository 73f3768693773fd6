// A module kind's description: everything the engine knows of a kind of block module without running it (its
// params, tensors, scene state, FLOPs, scratch memory and matrix products). Config parsing, the loader's
// tensor list, state files, the FLOP and memory models and the bench only ask these; the forward passes are
// core/block_module.h's, and config parsing (with its fuzzer) links no layer code.
//
// A kind owns its data: its own parameter struct (derived from ModuleParams, read by params_as<P>()) and its
// own weight struct (core/block_module.h). A new kind is a description file in core/kinds/, its forward pass
// beside its layer code and one name in core/kinds/kind_list.h, which both registries are built from.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/model_options.h"
#include "kernels/tensor.h"

namespace lact {

using TensorList = std::vector<std::pair<std::string, Shape>>;

// One matrix product of a module's encode: m x n x k, `batch` times (per head or per window).
struct GemmShape {
  std::string name;
  int64_t m, n, k, batch;
  bool transpose_b;  // a Linear weight [out, in] is used transposed
};

// How a stateful module's encode combines across ranks: its state summed (the fast-weight update is a sum
// over tokens) or every rank's part gathered (a KV cache).
enum class RankExchange { None, Sum, Gather };

class ModuleKind {
 public:
  virtual ~ModuleKind() = default;
  // The official class name without its module ("SelfAttention", "FastWeightGluMLPMultihead", ...).
  virtual const char* class_name() const = 0;
  // Reads this kind's params (the block_config entry's "params" and its length_dim). Every key it does not
  // implement is refused, never ignored.
  virtual std::shared_ptr<const ModuleParams> parse(const nlohmann::json& params, const std::string& length_dim,
                                                    int dim, const std::string& where) const = 0;
  // One line for `lact info`.
  virtual std::string describe(const ModelConfig& c, const ModuleConfig& m) const = 0;
  virtual int heads(const ModuleConfig&, int /*dim*/) const { return 0; }  // 0: no heads (an MLP)
  virtual int hidden(const ModuleConfig& m, int dim) const = 0;            // the inner width
  // Tensor names after the module's key prefix ("blocks.{l}.module_list.{j}.") besides "ln.weight".
  virtual TensorList tensors(const ModelConfig& c, const ModuleConfig& m) const = 0;
  // The tensors an encode leaves in the scene state, for `input_tokens` input tokens (none: stateless).
  virtual TensorList state_tensors(const ModelConfig&, const ModuleConfig&, int64_t /*input_tokens*/) const {
    return {};
  }
  bool stateful() const { return rank_exchange() != RankExchange::None; }
  virtual RankExchange rank_exchange() const { return RankExchange::None; }
  // Matrix-product FLOPs per layer (multiply-adds as 2).
  virtual double encode_flops(const ModelConfig& c, const ModuleConfig& m, double tokens,
                              double tokens_per_view) const = 0;
  virtual double render_flops(const ModelConfig& c, const ModuleConfig& m, double tokens_per_view,
                              double input_tokens) const = 0;
  // Floats of scratch at this module's peak during encode, besides the token buffers and the state; `chunk`
  // is the tokens of one chunk of whole views that token-wise work runs on.
  virtual double encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions& o,
                                       double tokens, double per_view, double chunk) const = 0;
  // The same for an encode streamed in chunks of `tokens` tokens (Model::encode's chunk_views; only where the
  // kind streams): a kind whose streamed encode keeps other buffers says so.
  virtual double streamed_encode_scratch_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions& o,
                                                double tokens, double per_view, double chunk) const {
    return encode_scratch_floats(c, m, o, tokens, per_view, chunk);
  }
  // The blocks this module allocates, besides its input y, in a render of `tokens` tokens (`per_view` a view)
  // taken at once (Model::render_batch), floats each, one entry a block: the CPU backend holds every block a
  // render's layer allocated (hold_step_blocks) and reuses a held block for a block of the same size, so the
  // estimate counts them by size (core/memory_estimate.h). By default the encode's scratch of one chunk of all the
  // tokens, as one block.
  virtual std::vector<double> render_block_floats(const ModelConfig& c, const ModuleConfig& m, const ModelOptions& o,
                                                  double tokens, double per_view) const {
    return {encode_scratch_floats(c, m, o, tokens, per_view, tokens)};
  }
  // The matrix products of one encode at `tokens` input tokens (`per_view` per view), for `lact bench`.
  virtual std::vector<GemmShape> gemm_shapes(const ModelConfig& c, const ModuleConfig& m, int64_t tokens,
                                             int64_t per_view) const = 0;
};

// Every kind's description, in the order of core/kinds/kind_list.h.
const std::vector<const ModuleKind*>& all_module_kinds();

// The kind of an official class name (nullptr when unknown), and the list of known ones for messages.
const ModuleKind* module_kind_by_class(const std::string& class_name);
std::string known_module_classes();

// Refuses any key of `params` not in `known` (one line naming the key and the module).
void refuse_unknown_params(const nlohmann::json& params, const std::vector<std::string>& known,
                           const std::string& module, const std::string& where);
// The checks every kind with heads or an inner width makes, with the same words.
void check_head_dim(int head_dim, int dim, const std::string& where);
void check_inter_multi(double inter_multi, int hidden, const std::string& where);

}  // namespace lact
