// Saving and loading a SceneState as safetensors: tensors "blocks.{layer}.module_list.{j}.w0|w1|w2"
// (the official key of the TTT module, with its updated fast weights), metadata "format", "config"
// (the model config JSON), "height", "width", "input_views", "model_identity" (the model file's content
// identity, system/file_identity.h), plus whatever the caller adds (the CLI records the model path and the data
// it encoded).
#pragma once

#include <map>
#include <string>

#include "core/model.h"
#include "core/safetensors.h"

namespace lact {

// `dtype` BF16 halves the file (fast weights rounded to bf16; loading converts them back to fp32 once).
void save_scene_state(const std::string& path, const SceneState& state, const ModelWeights& model, Backend& backend,
                      const std::map<std::string, std::string>& extra_metadata, StoredDtype dtype = StoredDtype::F32);

struct LoadedSceneState {
  SceneState state;
  std::map<std::string, std::string> metadata;
};

// Checks the file against the model (its variant, the same fast-weight keys and shapes, then the model file it
// was encoded with: another file, even of the same shapes, is refused in one line naming the state and both
// models) and uploads to `backend`. A state written before states recorded their model's identity loads with a
// one-line warning on stderr; a model not read from a file (no identity) is not checked.
LoadedSceneState load_scene_state(const std::string& path, const ModelWeights& model, Backend& backend);

// Only the metadata (to find the model a state was encoded with before loading it).
std::map<std::string, std::string> read_scene_state_metadata(const std::string& path);

}  // namespace lact
