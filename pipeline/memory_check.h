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

}  // namespace lact
