#include "pipeline/memory_check.h"

#include <malloc.h>

#include <algorithm>
#include <functional>

#include "core/memory_estimate.h"
#include "kernels/cpu/cpu_backend.h"
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
  // Nor is freed heap memory, which glibc keeps resident (an earlier scene's images, each under the mmap threshold):
  // counted, it came again beside the buffers that reuse it.
  ::malloc_trim(0);
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

namespace {
// A render batch is taken whole: what a refusal says it was for and what helps.
constexpr const char* kRendering = "rendering";
constexpr const char* kRenderAdvice = "use a smaller size";

// What a render call asks for at one size (check_render_memory's arguments).
struct RenderCall {
  int64_t batch = 1, call = 1, targets = 0, kept = 0;
  RenderPool pool;
};

// One render size's estimate against its limit and, on a GPU, the host's part against the host's.
struct RenderEstimate {
  EncodePlan plan;
  int64_t host_bytes = 0, host_limit = -1;
  std::string host_source;
  bool device_fits() const { return plan.limit < 0 || plan.need.total() <= plan.limit; }
  bool host_fits() const { return host_limit < 0 || host_bytes <= host_limit; }
};

// `process`: the CPU's whole-process part (process_memory_besides_encode, measured once).
RenderEstimate estimate_render(const Model& model, const RenderCall& r, int height, int width, int64_t process,
                               const HostMemoryLimit& host) {
  const Backend& backend = model.backend();
  const bool cpu = backend.name() == "cpu";
  RenderEstimate e;
  // On the host: the batch's rgb copy (Backend::to_host), the call's images, the target images and the kept ones.
  e.host_bytes = kept_view_bytes(r.batch + r.call + r.targets + r.kept, height, width);
  e.plan.views = e.plan.chunk_views = r.batch;
  e.plan.need = estimate_render_memory(model.config(), model.options(), r.batch, height, width, cpu, r.pool);
  if (cpu) {
    e.plan.need.views = e.host_bytes;
    add_cpu_process(model, e.plan.need, process, r.batch, height, width);
    e.plan.limit = cpu_process_limit(host);
    e.plan.limit_source = host.source;
    return e;
  }
  e.plan.limit = backend.usable_memory();
  e.plan.limit_source = backend.device_description();
  e.host_limit = host.bytes;
  e.host_source = "host, " + host.source;
  return e;
}

// The call at another size: a batch of as many of the asked views as the model takes there, the call's other
// batches at that size replaced by its last one's remainder.
RenderCall render_call_at(const Model& model, const RenderCall& r, int height, int width, int old_height,
                          int old_width) {
  RenderCall at;
  const int64_t asked = std::max({r.batch, r.call, r.targets});
  at.batch = std::clamp<int64_t>(asked, 1, model.render_batch_views(height, width));
  at.call = std::max(at.batch, r.call), at.targets = r.targets, at.kept = r.kept;
  for (const RenderBatch& b : r.pool.batches)
    if (b.height != old_height || b.width != old_width) at.pool.batches.push_back(b);
  if (asked > at.batch) at.pool.batches.push_back({asked % at.batch ? asked % at.batch : at.batch, height, width});
  return at;
}

// The largest size of height x width's shape, in whole patches and smaller, whose estimate fits; 0x0 where none
// does. The estimate grows with the size: the largest that fits is bisected.
std::pair<int, int> fitting_render_size(const Model& model, const RenderCall& r, int height, int width, int64_t process,
                                        const HostMemoryLimit& host) {
  const int patch = std::max(1, model.config().patch_size);
  const double rows = std::max(1, height / patch), columns = std::max(1, width / patch);
  auto size_at = [&](int64_t k) {  // k patches on the longer side
    const double scale = double(k) / std::max(rows, columns);
    return std::pair<int, int>(patch * std::max<int64_t>(1, std::llround(rows * scale)),
                               patch * std::max<int64_t>(1, std::llround(columns * scale)));
  };
  auto fits = [&](int64_t k) {
    const auto [h, w] = size_at(k);
    const RenderEstimate e = estimate_render(model, render_call_at(model, r, h, w, height, width), h, w, process, host);
    return e.device_fits() && e.host_fits();
  };
  int64_t low = 0, high = static_cast<int64_t>(std::max(rows, columns)) - 1;  // low: fits (0: none)
  while (low < high) {
    const int64_t middle = low + (high - low + 1) / 2;
    if (fits(middle))
      low = middle;
    else
      high = middle - 1;
  }
  if (low == 0 || !fits(low)) return {0, 0};
  return size_at(low);
}

// The refusal: the facts, and the CLI's line as check_encode_fits (or, the host's part on a GPU,
// check_view_read_fits) words it.
[[noreturn]] void refuse_render(const Model& model, const RenderCall& r, const RenderEstimate& e, int height, int width,
                                const std::string& flag, int64_t process, const HostMemoryLimit& host) {
  RenderMemoryShortfall facts;
  facts.height = height, facts.width = width, facts.views = r.batch, facts.tokens = e.plan.need.tokens;
  const bool device = !e.device_fits();
  facts.bytes_needed = device ? e.plan.need.total() : e.host_bytes;
  facts.bytes_available = device ? e.plan.limit : e.host_limit;
  const std::string where = model.backend().name() == "cpu"
                                ? model.backend().device_description() + " (" + e.plan.limit_source + ")"
                                : e.plan.limit_source;
  facts.limit = device ? where : e.host_source;
  std::tie(facts.fitting_height, facts.fitting_width) = fitting_render_size(model, r, height, width, process, host);
  std::string text;
  try {
    if (device) check_encode_fits(e.plan.need, e.plan.limit, where, kRendering, kRenderAdvice);
    check_view_read_fits(ViewReadMemory{e.host_bytes, 0, -1}, {}, height, width, e.host_limit, e.host_source);
  } catch (const Error& refusal) {
    text = refusal.what();
  }
  throw RenderMemoryError(facts, size_flag(flag, height, width) + ": " + text);
}
}  // namespace

EncodePlan check_render_memory(const Model& model, int64_t batch_views, int64_t call_views, int64_t target_views,
                               int height, int width, const std::string& flag, const RenderPool& pool,
                               int64_t kept_views) {
  RenderCall r;
  r.batch = std::max<int64_t>(1, batch_views), r.call = std::max(r.batch, call_views);
  r.targets = std::max<int64_t>(0, target_views), r.kept = std::max<int64_t>(0, kept_views), r.pool = pool;
  const HostMemoryLimit host = usable_host_memory();
  const int64_t process = model.backend().name() == "cpu" ? process_memory_besides_encode(model) : 0;
  const RenderEstimate e = estimate_render(model, r, height, width, process, host);
  if (!e.device_fits() || !e.host_fits()) refuse_render(model, r, e, height, width, flag, process, host);
  return e.plan;
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

namespace {
// The batches a camera path's calls of `per_call` frames make, in order (Model::render_batches: consecutive frames of
// one size, up to its token tile of views).
std::vector<RenderBatch> path_batches(const Model& model, const std::vector<std::pair<int, int>>& frames,
                                      int64_t per_call) {
  std::vector<RenderBatch> batches;
  const size_t call = static_cast<size_t>(std::max<int64_t>(1, per_call));
  for (size_t first = 0; first < frames.size(); first += call) {
    const size_t last = std::min(frames.size(), first + call);
    for (size_t begin = first, end = first; begin < last; begin = end) {
      const auto [height, width] = frames[begin];
      const auto most = static_cast<size_t>(render_batch_views(model, int64_t(last - begin), height, width));
      while (end < last && end - begin < most && frames[end] == frames[begin]) ++end;
      batches.push_back({int64_t(end - begin), height, width});
    }
  }
  return batches;
}

bool same_batch(const RenderBatch& a, const RenderBatch& b) {
  return a.views == b.views && a.height == b.height && a.width == b.width;
}

// The work's batches in order (a path's, `path`; an evaluation's of `batch` and its last of the rest; the same size
// again where the renders repeat), whose blocks the CPU backend may hold when one of `batch` views at height x width
// runs: its pool is emptied at each memory check and encode, not between batches. The batch is alone where it comes
// first and not again, and the backend's high-water mark (raised by the encode before it: at most its estimate) is
// below its first layer with its ray tokens.
RenderPool render_pool(const Model& model, const MemoryNeed& need, const std::vector<RenderBatch>& path,
                       const EncodePlan& encode, int64_t batch, int height, int width) {
  const RenderBatch self{batch, height, width};
  std::vector<RenderBatch> order = path;
  if (!need.render_path || need.path_frames.empty()) {
    order = {self};
    if (need.render_views >= 2 * batch) order.push_back(self);
    if (need.render_views > batch && need.render_views % batch)
      order.push_back({need.render_views % batch, height, width});
    if (need.render_repeats || need.render_path) order.push_back(self);  // calls again, or a path's next calls
  }
  RenderPool pool;
  int64_t seen = 0;
  for (const RenderBatch& b : order) {
    seen += same_batch(b, self);
    const bool known =
        std::any_of(pool.batches.begin(), pool.batches.end(), [&](const RenderBatch& k) { return same_batch(k, b); });
    if (!known && (!same_batch(b, self) || seen > 1)) pool.batches.push_back(b);
  }
  const auto* cpu = dynamic_cast<const CpuBackend*>(&model.backend());
  const EncodeMemory& e = encode.need;
  const double encoded = std::max(double(e.embedding), double(e.activations) + double(e.temporaries) + double(e.state));
  pool.alone = cpu && !order.empty() && same_batch(order.front(), self) && seen == 1 &&
               std::max(double(cpu->held_memory_bound()), encoded) <
                   double(render_first_layer_bytes(model.config(), model.options(), batch, height, width));
  return pool;
}
}  // namespace

EncodePlan check_memory_need(const Model& model, const MemoryNeed& need, std::vector<EncodePlan>* renders) {
  EncodePlan plan;
  if (need.encode_views > 0)
    plan = check_encode_memory(model, need.encode_views, need.height, need.width, need.flag, need.state_views,
                               need.scratch_dir);
  const std::vector<RenderBatch> path = path_batches(model, need.path_frames, need.render_views);
  for (const auto& [height, width] : need.render_sizes) {
    // A path's call returns all its frames together; an evaluation calls Model::render a batch at a time, with
    // every target image read before the first (render_and_measure).
    const int64_t batch = render_batch_views(model, need.render_views, height, width);
    const EncodePlan render = check_render_memory(
        model, batch, need.render_path ? need.render_views : batch, need.render_path ? 0 : need.render_views, height,
        width, need.render_flag, render_pool(model, need, path, plan, batch, height, width), need.render_kept_views);
    if (renders) renders->push_back(render);
  }
  if (need.scene)
    for (const std::vector<int>& group : need.reads) check_view_reading(*need.scene, group, need.height, need.width);
  return plan;
}

}  // namespace lact
