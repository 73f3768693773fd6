#include "pipeline/memory_check.h"

#include <algorithm>
#include <functional>

#include "core/memory_estimate.h"
#include "pipeline/scratch_file.h"
#include "system/error.h"
#include "system/host_memory.h"
#include "system/mapped_file.h"

namespace lact {

namespace {
// The most views Model::render takes in one batch of `views` at height x width: up to a token tile of them.
int64_t render_batch_views(const Model& model, int64_t views, int height, int width) {
  return std::clamp<int64_t>(views, 1, model.render_batch_views(height, width));
}

std::string size_flag(const std::string& flag, int height, int width) {
  return flag + " " + std::to_string(height) + "x" + std::to_string(width);
}
}  // namespace

namespace {
// What an encode's own buffers do not show: oneDNN's primitives and JIT code, the OpenMP threads' stacks,
// allocator rounding. Measured (docs/guide/scale.md) as 7 to 17 MiB above the rest of the estimate on fp32 runs of
// 1K to 16K tokens, and about 5 MiB less since a single product is described to oneDNN as a 2-D matmul (every
// peak of the nine shapes there fell by that much); allowed for as this much plus a share of the encode's buffers.
constexpr int64_t kRuntimeBytes = int64_t(12) << 20;
constexpr double kRuntimeShare = 0.04;
}  // namespace

int64_t process_memory_besides_encode(const Model& model) {
  model.backend().release_held_memory();  // freed blocks held for reuse are not the process's to keep
  const MappedMemory mapped = mapped_files_memory();
  const int64_t resident = std::max<int64_t>(0, resident_bytes());
  int64_t bytes = std::max<int64_t>(0, resident - mapped.resident) + mapped.size;
  if (model.backend().precision() == Precision::Bf16)  // Bf16Constants: every weight a product reads, packed once
    bytes += 2 * static_cast<int64_t>(model.weights().parameter_count);
  return bytes;
}

namespace {

// The largest chunk of views (all of them first) whose estimate fits `limit` (< 0: none known); where none
// does, the smallest the model takes, for the refusal to name.
EncodePlan largest_chunk_that_fits(const Model& model, int64_t views, int height, int width, int64_t state_views,
                                   int64_t limit, const std::function<EncodeMemory(int64_t)>& need_for) {
  EncodePlan plan;
  plan.views = views, plan.limit = limit, plan.chunk_views = views;
  plan.need = need_for(views);
  const int64_t all_views = state_views < 0 ? views : state_views;
  if (limit < 0 || plan.need.total() <= limit || model.encode_chunk(views, all_views, height, width, 1) == views)
    return plan;
  int64_t low = 1, high = views - 1;  // the estimate grows with the chunk: the largest that fits, else 1
  while (low < high) {
    const int64_t middle = low + (high - low + 1) / 2;
    if (need_for(middle).total() <= limit)
      low = middle;
    else
      high = middle - 1;
  }
  plan.chunk_views = model.encode_chunk(views, all_views, height, width, low);  // whole update tiles: no more
  plan.need = need_for(plan.chunk_views);
  return plan;
}

// The largest chunk that fits in memory; where none does and a scratch directory is given, the largest that fits
// with the residual stream spilled there. need_for(chunk, spilled).
EncodePlan plan_encode(const Model& model, int64_t views, int height, int width, int64_t state_views, int64_t limit,
                       const std::string& scratch_dir, const std::function<EncodeMemory(int64_t, bool)>& need_for) {
  EncodePlan plan = largest_chunk_that_fits(model, views, height, width, state_views, limit,
                                            [&](int64_t chunk) { return need_for(chunk, false); });
  if (limit < 0 || plan.need.total() <= limit || scratch_dir.empty() || plan.chunk_views >= views) return plan;
  EncodePlan spilled = largest_chunk_that_fits(model, views, height, width, state_views, limit,
                                               [&](int64_t chunk) { return need_for(chunk, true); });
  if (spilled.chunk_views >= views || spilled.need.total() > limit) return plan;
  spilled.spill_bytes = spilled.need.spilled;
  check_scratch_space(scratch_dir, spilled.spill_bytes);
  return spilled;
}

// The CPU's estimate's parts besides the model's buffers: the product buffers, the process and the runtime.
void add_cpu_process(const Model& model, EncodeMemory& need, int64_t process, int64_t views, int height, int width) {
  const bool bf16 = model.backend().precision() == Precision::Bf16;
  need.embedding += cpu_embed_operand_bytes(model.config(), bf16, views, height, width, need.chunk_views);
  need.temporaries += cpu_operand_bytes(model.config(), model.options(), bf16, views, height, width, need.chunk_views);
  need.process = process + kRuntimeBytes + static_cast<int64_t>(kRuntimeShare * double(need.total()));
}

// What the process may reach: the limits leave host.bytes above what it holds now.
int64_t cpu_process_limit(const HostMemoryLimit& host) {
  return host.bytes < 0 ? -1 : host.bytes + std::max<int64_t>(0, resident_bytes());
}
}  // namespace

EncodePlan check_encode_memory(const Model& model, int64_t views, int height, int width, const std::string& flag,
                               int64_t state_views, const std::string& scratch_dir) {
  const Backend& backend = model.backend();
  const int64_t count = std::max<int64_t>(1, views);
  const HostMemoryLimit host = usable_host_memory();
  auto encode_need = [&](int64_t chunk, bool spilled) {
    return estimate_encode_memory(model.config(), model.options(), count, height, width, state_views, chunk, spilled);
  };
  try {
    if (backend.name() == "cpu") {
      const int64_t process = process_memory_besides_encode(model), limit = cpu_process_limit(host);
      auto need_for = [&](int64_t chunk, bool spilled) {
        EncodeMemory need = encode_need(chunk, spilled);
        // The decoded views stay alive through the encode. Model::encode stages a chunk's pixels in one packed
        // copy, which the CPU's adopt_host reads in place: that copy is the pixels `embedding` already counts.
        need.views = kept_view_bytes(count, height, width);
        add_cpu_process(model, need, process, count, height, width);
        return need;
      };
      EncodePlan plan = plan_encode(model, count, height, width, state_views, limit, scratch_dir, need_for);
      plan.limit = limit;
      plan.limit_source = host.source;
      check_encode_fits(plan.need, limit, backend.device_description() + " (" + host.source + ")");
      return plan;
    }
    const int64_t limit = backend.usable_memory();
    EncodePlan plan = plan_encode(model, count, height, width, state_views, limit, scratch_dir, encode_need);
    plan.limit = limit;
    plan.limit_source = backend.device_description();
    check_encode_fits(plan.need, plan.limit, backend.device_description());
    const ViewReadMemory kept{kept_view_bytes(count, height, width), 0, -1};
    check_view_read_fits(kept, {}, height, width, host.bytes, "host, " + host.source);
    return plan;
  } catch (const Error& e) {
    throw Error(size_flag(flag, height, width), e.what());
  }
}

// A render batch is taken whole: what a refusal says it was for and what helps.
constexpr const char* kRendering = "rendering";
constexpr const char* kRenderAdvice = "use a smaller size";

EncodePlan check_render_memory(const Model& model, int64_t batch_views, int64_t call_views, int64_t target_views,
                               int height, int width, const std::string& flag) {
  const Backend& backend = model.backend();
  const bool cpu = backend.name() == "cpu";
  const int64_t batch = std::max<int64_t>(1, batch_views), call = std::max(batch, call_views);
  const HostMemoryLimit host = usable_host_memory();
  // On the host: the batch's rgb copy (Backend::to_host), the call's images and the target images.
  const int64_t host_bytes = kept_view_bytes(batch + call + std::max<int64_t>(0, target_views), height, width);
  EncodePlan plan;
  plan.views = plan.chunk_views = batch;
  plan.need = estimate_render_memory(model.config(), model.options(), batch, height, width, cpu);
  try {
    if (cpu) {
      const int64_t process = process_memory_besides_encode(model);
      plan.need.views = host_bytes;
      add_cpu_process(model, plan.need, process, batch, height, width);
      plan.limit = cpu_process_limit(host);
      plan.limit_source = host.source;
      check_encode_fits(plan.need, plan.limit, backend.device_description() + " (" + host.source + ")", kRendering,
                        kRenderAdvice);
      return plan;
    }
    plan.limit = backend.usable_memory();
    plan.limit_source = backend.device_description();
    check_encode_fits(plan.need, plan.limit, backend.device_description(), kRendering, kRenderAdvice);
    check_view_read_fits(ViewReadMemory{host_bytes, 0, -1}, {}, height, width, host.bytes, "host, " + host.source);
    return plan;
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

EncodePlan check_memory_need(const Model& model, const MemoryNeed& need, std::vector<EncodePlan>* renders) {
  EncodePlan plan;
  if (need.encode_views > 0)
    plan = check_encode_memory(model, need.encode_views, need.height, need.width, need.flag, need.state_views,
                               need.scratch_dir);
  for (const auto& [height, width] : need.render_sizes) {
    // A path's call returns all its frames together; an evaluation calls Model::render a batch at a time, with
    // every target image read before the first (render_and_measure).
    const int64_t batch = render_batch_views(model, need.render_views, height, width);
    const EncodePlan render =
        check_render_memory(model, batch, need.render_path ? need.render_views : batch,
                            need.render_path ? 0 : need.render_views, height, width, need.render_flag);
    if (renders) renders->push_back(render);
  }
  if (need.scene)
    for (const std::vector<int>& group : need.reads) check_view_reading(*need.scene, group, need.height, need.width);
  return plan;
}

}  // namespace lact
