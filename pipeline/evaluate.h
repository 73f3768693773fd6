// What `lact render` does with one scene once it is encoded, in one process (Run shares the work across ranks):
// render the targets batched, compare them with their ground truth, write their images; and render a camera
// path to frames and a video. With where a run writes (RunOutput).
#pragma once

#include <functional>
#include <string>

#include "core/lpips.h"
#include "pipeline/report.h"
#include "pipeline/scene_selection.h"
#include "system/output_files.h"

namespace lact {

struct OutputOptions {
  std::string folder = "out";
  bool save_images = false;  // <view>_gt.png and <view>_diff.png besides <view>.png
  bool save_npy = false;
  bool quiet = false;
  bool force = false;           // replace an existing file named by -o / --video
  std::string warnings = "on";  // --warnings off | on | error (pipeline/guard_rails.h)
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

// How render_and_measure keeps a scene's progress per view (pipeline/resume.h): the views an interrupted run
// finished, and what the caller does as views are written.
struct ViewsKept {
  // --resume: views of the targets an interrupted run measured, their images in place. A batch made of them
  // alone is not rendered again; one with any other view is rendered whole (the batches an uninterrupted run
  // renders, so the same pixels) and its kept views keep their files and reports.
  std::vector<ViewReport> done;
  // Once the first batch is rendered and checked, before its first image is written.
  std::function<void()> before_writing;
  // After each batch's images are written, before a signal can end lact: every view measured so far (kept ones
  // included), in target order.
  std::function<void(const std::vector<ViewReport>& so_far)> after_batch;
};

// The time rendering took (the batches rendered, not the views kept) and the views it rendered.
struct RenderTime {
  double seconds = 0;
  size_t views = 0;
};

// Renders `targets` of the selection from `state`, measures them against their ground truth and writes their
// images under `folder` (inside --out), batch by batch (the batches Model::render makes); adds the rendering's
// own time to `time`. The nearest-input baseline reuses `loaded` (the input views this process read:
// selection.inputs from position `first` on) and reads the others. Images are read unchecked: the caller (Run)
// checked their memory, with nearest_inputs_to_read's. With `lpips` (--lpips), each view's LPIPS and its nearest
// input's are measured too. Returns every target's report, in target order.
std::vector<ViewReport> render_and_measure(const Model& model, const SceneSelection& selection, const SceneState& state,
                                           const std::vector<int>& targets, const std::vector<PosedImage>& loaded,
                                           size_t first, const std::string& folder, RunOutput& out, RenderTime& time,
                                           const Lpips* lpips = nullptr, const ViewsKept& kept = {});
// The input views render_and_measure reads for the baseline of `targets`: the nearest input of each that is not
// among the `loaded` views from position `first`.
std::vector<int> nearest_inputs_to_read(const SceneSelection& selection, const std::vector<int>& targets, size_t first,
                                        size_t loaded);

// The frames of a camera path file, each size divisible by `patch` (Error naming the file and the frame).
std::vector<Camera> read_path_frames(const std::string& path, int patch);
// Renders `frames` (of the camera path file `path`) from `state` into folder/frame_NNNN.png (+ .json pose each), and
// with `video` non-empty an MP4 through ffmpeg (frames streamed to it: exactly this run's frames); memory checked by
// the caller.
// Frames of a camera path rendered in one Model::render call (render_frames; the memory check takes them whole).
constexpr size_t kPathFramesPerCall = 8;
void render_frames(const Model& model, const SceneState& state, const std::string& path,
                   const std::vector<Camera>& frames, const std::string& video, int fps, RunOutput& out);

}  // namespace lact
