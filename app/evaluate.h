// `lact render` over a dataset: per scene, encode the inputs once, render the targets batched, compare with
// their ground truth, write images and the report. And rendering a camera path to frames and a video.
#pragma once

#include <string>

#include "app/report.h"
#include "app/scene_inputs.h"

namespace lact::app {

struct OutputOptions {
  std::string folder = "out";
  bool save_images = false;  // <view>_gt.png and <view>_diff.png besides <view>.png
  bool save_npy = false;
  bool quiet = false;
};

// One scene: encode (or use `state` when given), render `targets_spec`, measure. Writes images under
// folder/<scene>/. Throws Error for anything wrong with this scene.
SceneReport evaluate_scene(const Model& model, const SceneSelection& selection, const SceneState* state,
                           const std::string& targets_spec, uint64_t seed, const OutputOptions& out);

// Renders `path` (a camera path file) from `state` into folder/frame_NNNN.png (+ .json pose each), and with
// `video` non-empty an MP4 through ffmpeg when installed. Cameras are used as given (the state's world).
void render_camera_path(const Model& model, const SceneState& state, const std::string& path,
                        const OutputOptions& out, const std::string& video, int fps);

// Creates `folder` and checks it can be written (before any work). Throws Error naming it.
void prepare_output_folder(const std::string& folder);

}  // namespace lact::app
