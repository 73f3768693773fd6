// The model's parameters on a backend, under the official key names (see lact_nvs_spec.md 7.2).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "kernels/backend.h"

namespace lact {

// A kind's own weights (core/layers.h derives each kind's struct from this).
struct KindWeights {
  virtual ~KindWeights() = default;
};

struct ModuleWeights {
  Tensor norm;                             // ln.weight [dim]
  std::shared_ptr<const KindWeights> own;  // the kind's tensors, as its loader made them

  // The kind's weights as its own struct (an internal error when the module is of another kind).
  template <typename W>
  const W& as() const {
    const W* w = dynamic_cast<const W*>(own.get());
    if (!w) throw_kind_mismatch();
    return *w;
  }

 private:
  [[noreturn]] static void throw_kind_mismatch();
};

struct ModelWeights {
  ModelConfig config;
  Tensor input_linear;                             // [dim, 12 p^2]
  Tensor input_layernorm;                          // [dim]
  std::vector<std::vector<ModuleWeights>> blocks;  // [layer][module]
  Tensor decoder_norm;                             // image_token_decoder.0.weight [dim]
  Tensor decoder_linear;                           // image_token_decoder.1.weight [3 p^2, dim]
  long long parameter_count = 0;
  std::string source;    // the file it came from
  std::string identity;  // that file's content identity (system/file_identity.h); empty when not from a file
  // What the model was trained with (safetensors metadata "image_size" = "HxW", "input_views"), 0 = unknown.
  int trained_height = 0, trained_width = 0, trained_input_views = 0;
  // What it was trained on (metadata "kind"): "object" (one object at the origin, cameras around it) or "scene"
  // (poses normalised into [-1, 1]); empty = unknown.
  std::string trained_kind;
};

// Reads a safetensors model: the config from __metadata__.config, every tensor under its official name,
// converted to float32 (F32 tensors used in place from the mapped file by the CPU backend). Every error names the file
// and the tensor.
ModelWeights load_model(const std::string& path, Backend& backend);

// The same for a config and a tensor lookup (used by the loader and by tests that build random models).
// `read(name, shape)` returns the tensor in `backend` memory or throws.
ModelWeights build_model_weights(const ModelConfig& config, Backend& backend,
                                 const std::function<Tensor(const std::string&, const Shape&)>& read,
                                 const std::string& source);

// The official name of every tensor the config needs, with its shape, in file order.
std::vector<std::pair<std::string, Shape>> expected_tensors(const ModelConfig& config);

}  // namespace lact
