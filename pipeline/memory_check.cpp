#include "pipeline/memory_check.h"

#include <algorithm>

#include "core/error.h"
#include "core/memory_estimate.h"
#include "kernels/host_memory.h"

namespace lact {

namespace {
std::string size_flag(const std::string& flag, int height, int width) {
  return flag + " " + std::to_string(height) + "x" + std::to_string(width);
}
}  // namespace

void check_encode_memory(const Model& model, int64_t views, int height, int width, const std::string& flag,
                         int64_t state_views) {
  const Backend& backend = model.backend();
  const int64_t count = std::max<int64_t>(1, views);
  const HostMemoryLimit host = usable_host_memory();
  try {
    EncodeMemory need = estimate_encode_memory(model.config(), model.options(), count, height, width, state_views);
    if (backend.name() == "cpu") {
      // The decoded views stay alive through the encode, and Model::embed stages one more copy of their pixels.
      need.views = kept_view_bytes(count, height, width);
      need.embedding += need.views;
      check_encode_fits(need, host.bytes, backend.device_description() + " (" + host.source + ")");
      return;
    }
    check_encode_fits(need, backend.usable_memory(), backend.device_description());
    const ViewReadMemory kept{kept_view_bytes(count, height, width), 0, -1};
    check_view_read_fits(kept, {}, height, width, host.bytes, "host, " + host.source);
  } catch (const Error& e) {
    throw Error(size_flag(flag, height, width), e.what());
  }
}

void check_view_reading(const Scene& scene, const std::vector<int>& indices, int height, int width) {
  std::vector<ViewRead> reads;
  for (int i : indices) {
    if (i < 0 || static_cast<size_t>(i) >= scene.views.size()) continue;  // the reader names a bad index itself
    const SceneView& v = scene.views[i];
    if (v.pixels)
      reads.push_back({v.pixels->width, v.pixels->height, false});
    else
      reads.push_back({v.camera.width, v.camera.height, v.distortion.any()});
  }
  const HostMemoryLimit host = usable_host_memory();
  try {
    check_view_read_fits(estimate_view_read_memory(reads, height, width), reads, height, width, host.bytes,
                         host.source);
  } catch (const Error& e) {
    throw Error(size_flag("--size", height, width), e.what());
  }
}

void check_memory_need(const Model& model, const MemoryNeed& need) {
  if (need.encode_views > 0)
    check_encode_memory(model, need.encode_views, need.height, need.width, need.flag, need.state_views);
  for (const auto& [height, width] : need.render_sizes)
    check_encode_memory(model, 1, height, width, need.render_flag, -1);
  if (need.scene)
    for (const std::vector<int>& group : need.reads) check_view_reading(*need.scene, group, need.height, need.width);
}

}  // namespace lact
