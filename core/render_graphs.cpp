#include "core/render_graphs.h"

#include "core/model.h"

namespace lact {

namespace {
std::vector<Tensor> tensors_of(const SceneState& state) {
  std::vector<Tensor> t;
  for (const ModuleState& m : state.modules)
    for (const auto& entry : m.tensors) t.push_back(entry.second);
  return t;
}

bool same_tensors(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].data() != b[i].data()) return false;
  return true;
}
}  // namespace

RenderGraphCache::Entry* RenderGraphCache::find_or_record(Backend& be, int64_t count, int height, int width,
                                                          int64_t rgb_rows, int64_t rgb_channels,
                                                          const Decode& decode) {
  for (auto& e : entries_)
    if (e->count == count && e->height == height && e->width == width) return e.get();
  auto fresh = std::make_unique<Entry>();
  fresh->count = count, fresh->height = height, fresh->width = width;
  fresh->poses = be.empty({count, kRayPoseFloats});
  fresh->rgb = be.empty({rgb_rows, rgb_channels});
  RecordingScope scope(be);
  if (!scope.recording()) return nullptr;  // not now (while profiling): run directly this time
  try {
    decode(fresh->poses, fresh->rgb);
  } catch (...) {
    usable_ = false;  // the scope ends the recording and releases the backend
    throw;
  }
  fresh->recording = scope.finish();
  if (!fresh->recording) {
    usable_ = false;  // the capture failed: run directly from now on
    return nullptr;
  }
  if (entries_.size() == kMaxEntries) entries_.erase(entries_.begin());
  entries_.push_back(std::move(fresh));
  return entries_.back().get();
}

std::optional<std::vector<float>> RenderGraphCache::render(Backend& be, const SceneState& state,
                                                           const std::vector<float>& packed_poses, int64_t count,
                                                           int height, int width, int64_t rgb_rows,
                                                           int64_t rgb_channels, const Decode& decode) {
  if (!be.can_record()) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!usable_) return std::nullopt;
  std::vector<Tensor> current = tensors_of(state);
  if (!same_tensors(current, state_tensors_)) {
    entries_.clear();
    state_tensors_ = std::move(current);
  }
  Entry* entry = find_or_record(be, count, height, width, rgb_rows, rgb_channels, decode);
  if (!entry) return std::nullopt;
  be.upload(entry->poses, packed_poses.data());
  be.replay(*entry->recording);
  return be.to_host(entry->rgb);
}

}  // namespace lact
