// The render path as one recording per (views, size) for the current scene state, replayed with new poses
// (CUDA graphs: a 512x512 view is ~30 short launches per layer, whose launch gaps a replay removes). A
// recording holds device addresses of the state, so the cache keeps the state's tensors alive and starts over
// when another state comes. A backend that cannot record, or a recording that fails, runs the ops directly.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "kernels/backend.h"

namespace lact {

struct SceneState;

class RenderGraphCache {
 public:
  // Writes rgb [views * tokens, channels] from poses [views, kRayPoseFloats], both in backend memory.
  using Decode = std::function<void(const Tensor& poses, Tensor& rgb)>;

  // The rendered patches on the host, by replaying (recording first when new) the decode of `count` views of
  // height x width; nullopt when this backend or this cache cannot record (then the caller runs decode directly).
  std::optional<std::vector<float>> render(Backend& be, const SceneState& state, const std::vector<float>& packed_poses,
                                           int64_t count, int height, int width, int64_t rgb_rows, int64_t rgb_channels,
                                           const Decode& decode);

 private:
  struct Entry {
    int64_t count;
    int height, width;
    Tensor poses, rgb;  // the recording's input and output buffers
    std::unique_ptr<Recording> recording;
  };
  static constexpr size_t kMaxEntries = 8;
  Entry* find_or_record(Backend& be, int64_t count, int height, int width, int64_t rgb_rows, int64_t rgb_channels,
                        const Decode& decode);

  std::mutex mutex_;
  bool usable_ = true;
  std::vector<Tensor> state_tensors_;  // the state the entries were recorded for (kept alive)
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace lact
