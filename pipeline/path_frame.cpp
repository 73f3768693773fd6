#include "pipeline/path_frame.h"

#include <cstdio>

#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

PathFrame state_frame(const std::map<std::string, std::string>& metadata, const std::string& state_path) {
  PathFrame frame;
  frame.recorded = true;
  frame.pose = pose_from_metadata(metadata, state_path);
  frame.normalize_poses = metadata_or(metadata, "normalize_poses", "none");
  // A state whose transform is the identity renders in raw coordinates, whatever its flag said.
  if (frame.pose.world == PoseTransform().world && frame.pose.scale == 1.0) frame.normalize_poses = "none";
  return frame;
}

PathFrame selection_frame(const SceneSelection& selection) {
  PathFrame frame;
  frame.recorded = true;
  if (selection.normalization == PoseNormalization::None) return frame;
  frame.normalize_poses = pose_normalization_name(selection.normalization);
  frame.pose = selection.pose;
  return frame;
}

namespace {
std::string frame_text(const PathFrame& f) {
  return f.raw() ? "raw coordinates" : "the frame of --normalize-poses " + f.normalize_poses;
}
}  // namespace

void check_path_frame(const std::string& path, const PathFrame& run, const std::string& state, bool warn) {
  const PathFrame made = read_camera_path_frame(path);
  const std::string source = state.empty() ? "this run" : state;
  if (!made.recorded) {
    if (warn && !run.raw())
      std::fprintf(stderr,
                   "lact: warning: %s records no frame (made before paths did): read as raw coordinates, but %s "
                   "renders in %s; remake it with lact path ... --state if the views look wrong\n",
                   terminal_text(path).c_str(), terminal_text(source).c_str(), frame_text(run).c_str());
    return;
  }
  if (made.same_world(run)) return;
  const std::string remake =
      made.made_by == kViewerPathMaker
          ? "render it as the lact view session that saved it was started (--normalize-poses " + made.normalize_poses +
                " and the same --inputs, or that session's --state)"
          : "remake it with lact path " + (made.made_by.empty() ? std::string("KIND") : made.made_by) +
                (state.empty() ? " --data ... --normalize-poses " + run.normalize_poses + " (and the same --inputs)"
                               : " --state " + state);
  throw Error(path, "was made in " + frame_text(made) + (made.raw() || run.raw() ? "" : " of other views") + ", but " +
                        source + " renders in " + frame_text(run) + ": " + remake);
}

}  // namespace lact
