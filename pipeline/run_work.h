// How a Run divides and sizes its work (pipeline/run.h's own helpers): a rank's share of a scene's input views,
// the memory an encode of that share takes, a camera at another size.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pipeline/distribution.h"
#include "pipeline/memory_check.h"
#include "pipeline/scene_selection.h"
#include "pipeline/time_estimate.h"

namespace lact {

// This rank's share [begin, end) of the selection's input views; Error when a rank would have none.
std::pair<size_t, size_t> input_share(const SceneSelection& selection, const Distribution& d);
// The view indices of that share.
std::vector<int> input_share_views(const SceneSelection& selection, std::pair<size_t, size_t> share);
// Encoding the share at the working size (--size), every rank's views in the state, and reading the share.
MemoryNeed encode_need(const SceneSelection& selection, std::pair<size_t, size_t> share);
// The work of that encode (for its time estimate); renders added by the caller.
WorkSize encode_work(const SceneSelection& selection, std::pair<size_t, size_t> share);
// Into `need`: each size among `frames` (a camera path's), rendered kPathFramesPerCall at a time (render_frames),
// named "`path`: a frame of".
void add_frame_sizes(const std::vector<Camera>& frames, const std::string& path, MemoryNeed& need);

}  // namespace lact
