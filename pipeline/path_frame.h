// The world a run's cameras are in, and a camera path checked against it: a state encoded with
// --normalize-poses renders in the normalised frame, so a path made in the data's raw coordinates (or in
// another normalisation) would look at nothing. `lact path --state S` makes paths in S's frame.
#pragma once

#include <map>
#include <string>

#include "datasets/camera_path_io.h"
#include "pipeline/scene_selection.h"

namespace lact {

// The made_by of the camera paths the desktop viewer saves and exports (in its session's frame): refused in
// another frame, they are rendered with that session's flags, not remade with lact path.
inline constexpr const char* kViewerPathMaker = "lact view";

// A saved state's frame, from its metadata (normalize_poses, pose_world, pose_scale).
PathFrame state_frame(const std::map<std::string, std::string>& metadata, const std::string& state_path);
// The frame of a scene selected with its --normalize-poses.
PathFrame selection_frame(const SceneSelection& selection);

// Error (one line: how to remake it) when the camera path file `path` records a frame other than `run`'s, which
// comes from `state` (a state file) or, when that is empty, from the run's --normalize-poses. A path that
// records no frame is read as raw: a warning on stderr (when `warn`) if the run's frame is normalised.
void check_path_frame(const std::string& path, const PathFrame& run, const std::string& state, bool warn);

}  // namespace lact
