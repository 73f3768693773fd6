// `lact render` over a dataset: per scene, encode the inputs once, render the targets batched, compare with
// their ground truth, write images and the report. And rendering a camera path to frames and a video.
#pragma once

#include <string>

#include "pipeline/distribution.h"
#include "pipeline/output_files.h"
#include "pipeline/report.h"
#include "pipeline/scene_selection.h"

namespace lact {

struct OutputOptions {
  std::string folder = "out";
  bool save_images = false;  // <view>_gt.png and <view>_diff.png besides <view>.png
  bool save_npy = false;
  bool quiet = false;
  bool force = false;  // replace an existing file named by -o / --video
};

// Everything a run writes goes through here: the options, the --out folder and the files it must not touch.
struct RunOutput {
  explicit RunOutput(const OutputOptions& o) : options(o), folder(o.folder) {}
  OutputOptions options;
  OutputFolder folder;
  InputFiles inputs;
};

// Adds the files of `selection` (its camera file and every view's image) to `inputs`.
void add_scene_inputs(const SceneSelection& selection, InputFiles& inputs);

// One scene: encode (or use `state` when given), render `targets_spec`, measure. Writes images under
// folder/<safe scene name>/. Throws Error for anything wrong with this scene. Across ranks: the input views
// encoded together, the targets shared out (each rank writes its own images), every rank returning the
// whole report.
SceneReport evaluate_scene(const Model& model, const SceneSelection& selection, const SceneState* state,
                           const std::string& targets_spec, uint64_t seed, RunOutput& out,
                           const Distribution& distribution = {});

// Renders `path` (a camera path file) from `state` into folder/frame_NNNN.png (+ .json pose each), and with
// `video` non-empty an MP4 through ffmpeg when installed (frames streamed to it: exactly this run's frames).
// Cameras are used as given (the state's world).
void render_camera_path(const Model& model, const SceneState& state, const std::string& path, const std::string& video,
                        int fps, RunOutput& out);

}  // namespace lact
