// The memory checks before a run allocates: an encode (or a render) of some views at a working size against
// what the model's backend may take, and reading views (decode, undistort, resize to cover the size) against
// what this process may take on the host (kernels/host_memory.h). Each refusal is one line naming the flag
// and the size, the estimate and the limit that is short.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "datasets/scene.h"

namespace lact {

// On the CPU backend the views the encode keeps count with its own buffers against the host's limit; on a GPU
// the encode is held against the device's memory and the kept views against the host's.
void check_encode_memory(const Model& model, int64_t views, int height, int width, const std::string& flag,
                         int64_t state_views);

// Reading `indices` of `scene` at height x width, from the views' stated image sizes.
void check_view_reading(const Scene& scene, const std::vector<int>& indices, int height, int width);

// All one piece of work (a scene, a camera path) allocates, checked at once before any of it: the views this
// process encodes (of `state_views` across ranks), one view rendered at each of `render_sizes`, and the views it
// reads, group by group (a group's images decoded and kept together).
struct MemoryNeed {
  int height = 0, width = 0;  // the working size, set by `flag`
  std::string flag = "--size";
  int64_t encode_views = 0, state_views = -1;  // 0: nothing encoded
  std::vector<std::pair<int, int>> render_sizes;
  std::string render_flag = "--size";  // names the rendered sizes ("PATH: a frame of")
  const Scene* scene = nullptr;        // the scene `reads` index
  std::vector<std::vector<int>> reads;
};
// Error naming the flag and the size, the estimate and the limit that is short, for the first part that does
// not fit: the encode, then the rendered sizes, then the reads.
void check_memory_need(const Model& model, const MemoryNeed& need);

}  // namespace lact
