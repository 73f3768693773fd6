// Which files already at one of lact's output names inside --out a run may replace or remove without --force:
// lact's own, told by their content, whatever report is (or is not) beside them: a PNG carrying lact's mark
// (datasets/png_tag.h), a path frame's camera file as render_frames writes it, and an .npy of float32 [H, W, 3]
// exactly as write_npy writes it beside a marked PNG of H x W. Any other file there is the user's: a run that would
// write over it is refused before any work, naming it, unless --force; a rerun's clean-up leaves it alone.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "pipeline/evaluate.h"

namespace lact {

// True when `path` holds what render_frames writes beside a frame: one camera, {c2w, fx, fy, cx, cy, w, h}
// (a regular file, not through a link).
bool is_frame_camera(const std::string& path);
// True when `path` (a .png, a frame's .json or an .npy) is one of lact's outputs, as the header says.
bool is_lact_output(const std::string& path);

// The files, relative to --out, that evaluating `targets` into the scene folder `folder` writes:
// <folder>/<index>.png, and with the options' images and npy also _gt.png, _diff.png and .npy.
std::vector<std::string> view_output_names(const std::string& folder, const std::vector<int>& targets,
                                           const OutputOptions& options);
// "frame_0012": the name of a path's frame `index` without its suffix, as render_frames writes it.
std::string path_frame_stem(size_t index);
// The files, relative to --out, that rendering a path of `frames` frames writes: frame_NNNN.png, .json (.npy).
std::vector<std::string> path_frame_names(size_t frames, const OutputOptions& options);

// How check_ours_to_replace decides for one front end: the command line's by default.
struct ReplaceRule {
  // Files lact may replace besides those is_lact_output knows by content (the viewer's path.json, and a video
  // this viewer session wrote itself); given the path under --out. Empty: none.
  std::function<bool(const std::string& path)> also_ours;
  // What the refusal tells the user to do.
  std::string remedy = "--force replaces it, or choose another --out";
};

// Error(file, "exists and is not lact's output ...: <remedy>") for the first of `names` (relative to --out) that
// exists and is neither lact's nor rule.also_ours, unless out.options.force. A link there is refused even so.
void check_ours_to_replace(const RunOutput& out, const std::vector<std::string>& names, const ReplaceRule& rule = {});

}  // namespace lact
