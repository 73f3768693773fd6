// What encode, render, info and the viewer share: the data options, reading the scene, choosing views, the
// working size, pose normalisation, loading the input views, the memory check before any of it is allocated.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "datasets/pose_normalization.h"
#include "datasets/scene.h"

namespace lact {

// The data flags, each typed value parsed where the flag is read (app/flags.cpp, the Python module), so a bad
// value is refused before any work, naming its flag.
struct DataOptions {
  std::string data, scene, inputs;
  std::pair<int, int> size{0, 0};                               // --size (height, width); {0, 0}: not given
  std::array<float, 3> background{1, 1, 1};                     // --background (white)
  PoseNormalization normalize_poses = PoseNormalization::None;  // --normalize-poses
  std::string images;                                           // COLMAP: the image folder (--images)
  uint64_t seed = 0;
  int downscale = 1;
  // The model's training size (its metadata; apply_model_defaults): without --size, the working size is its pixel
  // count at the views' aspect. 0 = unknown: the views' own size.
  int trained_height = 0, trained_width = 0;
  bool model_inputs = false;  // --inputs was filled from the model's metadata (the run says which views)
};

struct SceneSelection {
  Scene scene;
  std::vector<int> inputs;    // empty when no --inputs
  int height = 0, width = 0;  // working size
  std::array<float, 3> background{};
  PoseTransform pose;  // applied to every camera of this run
  PoseNormalization normalization = PoseNormalization::None;
  std::string size_rule;  // how the working size was chosen, for the line a run prints ("--size", ...)
};

// Picks the inputs of `scene`, fixes the working size and the pose transform. The size: --size; else the model's
// training pixel count at the views' aspect (default_size); else the views' own size. `patch` checks it.
// `targets` (--targets) is what --inputs rest leaves out: every view that is not a target.
SceneSelection plan_scene(const Scene& scene, const DataOptions& options, int patch, const std::string& targets = "");
// Reads --data, selects --scene (or the only one) and plans it.
SceneSelection select_scene_views(const DataOptions& options, int patch, const std::string& targets = "");
// The default working size: `pixels` at the aspect of a view_height x view_width view, each side the nearest
// multiple of `patch` (at least one patch): 4096 pixels at 270x480 and patch 8 give 48x88.
std::pair<int, int> default_size(int64_t pixels, int view_height, int view_width, int patch);
ReadOptions read_options(const DataOptions& options);

// Error naming `flag` and the size when encoding (or rendering) `views` views at height x width would need more
// memory than the model's backend has: checked before any image is decoded or tensor allocated.
// `state_views` as estimate_encode_memory's (across ranks: every rank's views, for the gathered KV caches).
void check_memory(const Model& model, int64_t views, int height, int width, const std::string& flag,
                  int64_t state_views = -1);

// The cameras of `indices` at the selection's working size, pose transform applied; with images when asked
// (their reading checked against the host's memory first).
std::vector<PosedImage> selected_views(const SceneSelection& selection, const std::vector<int>& indices,
                                       bool with_images);
// The same with images, for work whose reads were checked up front with the rest of its memory (Run).
std::vector<PosedImage> read_checked_views(const SceneSelection& selection, const std::vector<int>& indices);

// Metadata a scene state records about its origin (so `render --state` needs no more flags), and back.
std::map<std::string, std::string> origin_metadata(const DataOptions& options, const SceneSelection& selection,
                                                   const std::string& model_path);
PoseTransform pose_from_metadata(const std::map<std::string, std::string>& metadata, const std::string& where);
// A metadata value or `fallback`; text stored escaped because it was not UTF-8 comes back as its exact bytes.
std::string metadata_or(const std::map<std::string, std::string>& metadata, const char* key,
                        const std::string& fallback);
// The model a state records, for `render --state` without --model; one that is missing or unreadable is an Error
// naming the state and the path it records (a relative one is read from the working directory, as before).
std::string model_recorded_in_state(const std::map<std::string, std::string>& metadata, const std::string& state_path);
// The scene a state was encoded from (`state_path`'s metadata: data, scene, preprocessing, pose transform, inputs),
// with flags in `data` overriding its data and scene; the working size is --size or the state's.
SceneSelection plan_from_state_metadata(const std::map<std::string, std::string>& metadata, DataOptions data,
                                        const std::string& state_path, int patch);

// Views as text for a printed line: "0,1,2", or the first 12 and how many more.
std::string views_text(const std::vector<int>& views);

// The model at `path`; a file that is not one but a scene state or a PyTorch checkpoint is named as such.
std::unique_ptr<Model> load_model_for(const std::string& path, Backend& backend);
// Error naming `path` and the conversion command when it is a PyTorch checkpoint (a zip archive or a pickle).
void refuse_pytorch_checkpoint(const std::string& path);
// What the model was trained with (its metadata), for the defaults: the training size (the default --size's pixel
// count) and, with `inputs_too`, --inputs uniform:N when not given.
void apply_model_defaults(DataOptions& options, const Model& model, bool inputs_too);

}  // namespace lact
