#include "pipeline/run_work.h"

#include <algorithm>
#include <set>
#include <string>

#include "pipeline/evaluate.h"
#include "system/error.h"

namespace lact {

std::pair<size_t, size_t> input_share(const SceneSelection& selection, const Distribution& d) {
  const size_t views = selection.inputs.size();
  if (views < static_cast<size_t>(d.size()))
    throw Error("--inputs", std::to_string(views) + " input views for " + std::to_string(d.size()) +
                                " ranks: every rank needs at least one view");
  return share_of(d, views);
}

std::vector<int> input_share_views(const SceneSelection& selection, std::pair<size_t, size_t> share) {
  return std::vector<int>(selection.inputs.begin() + share.first, selection.inputs.begin() + share.second);
}

MemoryNeed encode_need(const SceneSelection& selection, std::pair<size_t, size_t> share) {
  MemoryNeed need;
  need.height = selection.height, need.width = selection.width;
  need.encode_views = static_cast<int64_t>(share.second - share.first);
  need.state_views = static_cast<int64_t>(selection.inputs.size());  // the KV caches gathered from every rank
  need.scene = &selection.scene;
  need.reads.push_back(input_share_views(selection, share));
  return need;
}

WorkSize encode_work(const SceneSelection& selection, std::pair<size_t, size_t> share) {
  WorkSize work;
  work.encode_views = static_cast<int64_t>(share.second - share.first);
  work.state_views = static_cast<int64_t>(selection.inputs.size());
  work.height = selection.height, work.width = selection.width;
  return work;
}

void add_frame_sizes(const std::vector<Camera>& frames, const std::string& path, MemoryNeed& need) {
  std::set<std::pair<int, int>> sizes;
  for (const Camera& c : frames) {
    if (sizes.insert({c.height, c.width}).second) need.render_sizes.push_back({c.height, c.width});
    need.path_frames.push_back({c.height, c.width});
  }
  need.render_views = static_cast<int64_t>(std::min(frames.size(), kPathFramesPerCall));
  need.render_path = true;
  need.render_flag = path + ": a frame of";
}

}  // namespace lact
