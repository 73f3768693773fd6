// The memory checks before a run allocates: an encode (or a render) of some views at a working size against
// what the model's backend may take, and reading views (decode, undistort, resize to cover the size) against
// what this process may take on the host (system/host_memory.h). Each refusal is one line naming the flag
// and the size, the estimate and the limit that is short.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/memory_estimate.h"
#include "core/model.h"
#include "datasets/scene.h"
#include "system/error.h"

namespace lact {

// An encode that fits: the views its layers take at once (all of them unless it is streamed, Model::encode),
// and its estimate (on the CPU the whole process's peak) against the limit that applies.
struct EncodePlan {
  int64_t views = 0, chunk_views = 0;
  int64_t spill_bytes = 0;  // > 0: the residual stream kept in a scratch file of this size (pipeline/scratch_file.h)
  EncodeMemory need;
  int64_t limit = -1;  // bytes (-1: none known)
  std::string limit_source;
};
// On the CPU backend the whole process counts against the host's limit (--memory-limit caps its peak RSS): what
// it holds now (the model's mapped pages counted whole, and the weights' bf16 copies), the views the encode
// keeps and the encode's own buffers; on a GPU the encode is held against the device's memory and the kept
// views against the host's. Where all the views do not fit at once and the model streams, the largest chunk
// of views that fits; where none does, the residual stream spilled to a scratch file (`scratch_dir`, --scratch; empty:
// never) with the largest chunk that then fits, the directory's free space checked.
EncodePlan check_encode_memory(const Model& model, int64_t views, int height, int width, const std::string& flag,
                               int64_t state_views, const std::string& scratch_dir = "");

// Why a render size was refused for memory, for each front end to word (the CLI: RenderMemoryError's one line;
// Python: its size=(H, W) advice): the size and its batch, the estimate against the limit that is short, and the
// largest size of the same shape (whole patches) whose estimate fits (0x0 where none does).
struct RenderMemoryShortfall {
  int height = 0, width = 0;
  int64_t views = 0, tokens = 0;  // the batch Model::render takes whole
  int64_t bytes_needed = 0, bytes_available = 0;
  std::string limit;  // what has the bytes: "CPU, 2 threads, ... (MemAvailable)", "host, MemAvailable"
  int fitting_height = 0, fitting_width = 0;
};

// A render refused for memory: Error's text is the CLI's line ("--size 128x128: rendering N tokens needs about
// ...: use a smaller size").
class RenderMemoryError : public Error {
 public:
  RenderMemoryError(RenderMemoryShortfall facts, const std::string& text) : Error(text), facts_(std::move(facts)) {}
  const RenderMemoryShortfall& facts() const { return facts_; }

 private:
  RenderMemoryShortfall facts_;
};

// What one Model::render call at height x width holds at its peak: a batch of `batch_views` (Model::render_batch:
// taken whole, never in chunks; estimate_render_memory) in a call returning `call_views` images together, with
// `target_views` target images read beside them (an evaluation's; a camera path has none), `pool` what the CPU
// backend may hold when it runs (the work's other batches since it last emptied its pool: estimate_render_memory) and
// `kept_views` other images the host keeps through the renders (MemoryNeed::render_kept_views).
// The backend holds the batch's rgb output; the host its copy, the call's images, the targets and the kept images (3
// floats a pixel each); the CPU all of them. RenderMemoryError naming `flag` and the size where it does not fit.
// Returns the estimate (EncodePlan::need).
EncodePlan check_render_memory(const Model& model, int64_t batch_views, int64_t call_views, int64_t target_views,
                               int height, int width, const std::string& flag, const RenderPool& pool = {},
                               int64_t kept_views = 0);

// The CPU's whole-process part of an encode's estimate: this process's resident memory now (held blocks and freed
// heap memory returned first) less its mapped files' resident pages, the mapped files whole and, with bf16
// products, the weights' bf16 copies.
int64_t process_memory_besides_encode(const Model& model);

// Reading `indices` of `scene` at height x width, from the views' stated image sizes.
void check_view_reading(const Scene& scene, const std::vector<int>& indices, int height, int width);

// All one piece of work (a scene, a camera path) allocates, checked at once before any of it: the views this
// process encodes (of `state_views` across ranks), a batch of `render_views` rendered at each of `render_sizes`, and
// the views it reads, group by group (a group's images decoded and kept together).
struct MemoryNeed {
  int height = 0, width = 0;  // the working size, set by `flag`
  std::string flag = "--size";
  int64_t encode_views = 0, state_views = -1;  // 0: nothing encoded
  std::vector<std::pair<int, int>> render_sizes;
  int64_t render_views = 1;  // the most views rendered in one call at a size (Model::render batches up to a token tile)
  // Images at the working size the host keeps through the renders besides the targets: an evaluation's input views
  // (the nearest-input baseline reads them in place) and the nearest inputs that baseline reads besides.
  int64_t render_kept_views = 0;
  bool render_path = false;  // the renders are a camera path's calls (render_frames): no target images beside them
  std::vector<std::pair<int, int>> path_frames;  // a path's frame sizes in order: the batches its calls make
  bool render_repeats = false;  // the sizes are rendered again before another check (Run::check_render_size's calls)
  std::string render_flag = "--size";  // names the rendered sizes ("PATH: a frame of")
  std::string scratch_dir;             // where an encode that does not fit in memory may spill (empty: never)
  const Scene* scene = nullptr;        // the scene `reads` index
  std::vector<std::vector<int>> reads;
};
// Error naming the flag and the size, the estimate and the limit that is short, for the first part that does
// not fit: the encode, then the rendered sizes, then the reads.
// Returns the encode's plan (chunk_views 0 when nothing is encoded) and, in `renders` (when given), each rendered
// size's estimate.
EncodePlan check_memory_need(const Model& model, const MemoryNeed& need, std::vector<EncodePlan>* renders = nullptr);

}  // namespace lact
