// How much backend memory an encode needs at its peak, from the config and the input size alone, so that
// a scene too large for the device fails before allocating, with one line naming the estimate and what
// is free. Counted from the model code's allocations (embed, the three token buffers, the largest module's
// temporaries, the state of every layer); tests/unit/core/test_memory_estimate.cpp holds it against the peak the CPU
// backend measures.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/model.h"

namespace lact {

struct EncodeMemory {
  int64_t tokens = 0;
  int64_t chunk_views = 0;  // views the layers take at once (all of them unless the encode is streamed)
  int64_t embedding = 0;    // bytes: pixels, ray tokens and tokens while embedding (before the layers' buffers)
  int64_t activations = 0;  // bytes: the token buffers x, y, out
  int64_t temporaries = 0;  // bytes: the largest module's scratch
  int64_t state = 0;        // bytes: fast weights / KV caches of every layer
  int64_t views = 0;        // bytes: the decoded input views beside it (kept_view_bytes), on the CPU backend
  int64_t process = 0;      // bytes: the rest of the process (libraries, the model's pages), when counted
  int64_t spilled = 0;      // bytes of the residual stream kept in a scratch file instead (not counted in total)
  int64_t total() const {   // each part is at most 9e18 (saturated), so the sum is done in double
    const double layers = double(activations) + double(temporaries) + double(state);
    const double all = double(process) + double(views) + std::max(double(embedding), layers);
    return all > 9.0e18 ? int64_t(9.0e18) : int64_t(all);
  }
};

// `state_views`: the views whose tokens the state holds when that is not `views` (-1): across ranks each
// rank encodes its share of the views but keeps every rank's KV cache. `chunk_views` (0 or `views`: all at
// once): the views of a streamed encode's chunks (Model::encode; only where the config streams): the residual
// stream holds every token, the rest a chunk's. `spill_residual` (a streamed encode only): the residual stream
// kept in a scratch file (core/residual_store.h), memory holding a chunk of it and the chunk's host copy.
EncodeMemory estimate_encode_memory(const ModelConfig& config, const ModelOptions& options, int64_t views, int height,
                                    int width, int64_t state_views = -1, int64_t chunk_views = 0,
                                    bool spill_residual = false);

// One render batch: `views` views of height x width taken at once (Model::render_batch).
struct RenderBatch {
  int64_t views = 0;
  int height = 0, width = 0;
};

// What the CPU backend's pool of freed blocks (kernels/cpu/block_pool.h) may hold when a render batch runs.
struct RenderPool {
  // The other batches of the work since the pool was last emptied (a memory check, an encode), this batch's size
  // again where it repeats: their blocks may be held.
  std::vector<RenderBatch> batches;
  // The batch comes first, its size does not come again before the pool is emptied, and the pool's high-water mark
  // is below its first layer with its ray tokens still held: they are freed there, and none of its layers' blocks
  // maps their size again.
  bool alone = false;
};

// A render batch of `views` at height x width taken at once (Model::render_batch: up to a token tile of views).
// embedding: the rgb output, the ray tokens and x while embedding; activations: x and the rgb output through the
// layers; state: as the encode's of these tokens. temporaries: where `layer_blocks_held` (the CPU backend holds
// every block a render's layer allocated, hold_step_blocks, and reuses a held block for a block of the same size),
// the blocks it may have beside x and the rgb output: for each block size, the most of it alive at once in any step
// of this batch or of `pool`'s batches (each module's y and ModuleKind::render_block_floats; the ray tokens, but
// this batch's where it is alone), at most each module's y and blocks summed over a layer (the pool's high-water mark
// after the first layer). Elsewhere the largest module's y and encode scratch (the encode's layers plus the rgb
// output). `views` (the host's part) is left to the caller.
EncodeMemory estimate_render_memory(const ModelConfig& config, const ModelOptions& options, int64_t views, int height,
                                    int width, bool layer_blocks_held, const RenderPool& pool = {});

// The bytes the backend has alive at the start of a render batch's first layer plus its ray tokens' block and the
// first module's y: the high-water mark below which the ray tokens are not kept through that layer (RenderPool).
int64_t render_first_layer_bytes(const ModelConfig& config, const ModelOptions& options, int64_t views, int height,
                                 int width);

// The CPU backend's product buffers, which keep the size of the largest product (kernels/cpu/dnnl_gemm.cpp): bf16
// products pack both operands into bf16; fp32 products copy a large transposed A (a token tile of a module's inner
// width) to its transpose. Bytes for an encode taking `chunk_views` views (0: all) at once.
int64_t cpu_operand_bytes(const ModelConfig& config, const ModelOptions& options, bool bf16, int64_t views, int height,
                          int width, int64_t chunk_views = 0);

// The part of them alive while a chunk's tokens are embedded: with bf16 products the pixel tokens packed for the
// input linear (tokens x input_channels, 2 bytes each), beside the buffers EncodeMemory::embedding counts.
int64_t cpu_embed_operand_bytes(const ModelConfig& config, bool bf16, int64_t views, int height, int width,
                                int64_t chunk_views = 0);

// Throws lact::Error when the estimate exceeds `available` bytes (available < 0: unknown, no check).
// `device` names what has them, e.g. "CPU, 2 threads (MemAvailable)"; `doing` and `advice` say what the tokens
// are for and what to do (a render batch: "rendering", "use a smaller size").
void check_encode_fits(const EncodeMemory& need, int64_t available, const std::string& device,
                       const char* doing = "encoding", const char* advice = "use fewer or smaller input views");

// Host bytes the views of an encode keep while it runs: each at the working size, 3 floats a pixel (the
// encode's own copy of the pixels is in EncodeMemory::embedding). On the CPU backend they share its memory.
int64_t kept_view_bytes(int64_t views, int height, int width);

// One view as it is read: its image's size and whether it is undistorted first.
struct ViewRead {
  int64_t width = 0, height = 0;
  bool undistorted = false;
};
// The size a width x height image is resized to to cover height x width (datasets/preprocess.h's cover_crop,
// in double so that no size overflows): {resized height, resized width}.
std::pair<int64_t, int64_t> cover_size(const ViewRead& view, int height, int width);

// Host bytes reading views at height x width takes at its peak: every view read so far, kept at the working
// size, and for the one being read its decoded file (4 bytes a pixel), float copy and undistorted copy (16
// each) and cover-resized copy (16 a resized pixel), alive together.
struct ViewReadMemory {
  int64_t kept = 0;
  int64_t largest_view = 0;  // the largest one view's transient buffers
  int view = -1;             // its position in the list
  int64_t total() const;
};
ViewReadMemory estimate_view_read_memory(const std::vector<ViewRead>& views, int height, int width);

// Throws lact::Error when reading needs more than `available` bytes (< 0: unknown, no check), naming the view's
// resize when that is what does not fit; `limit` names what set `available` ("MemAvailable", "ulimit -v", ...).
void check_view_read_fits(const ViewReadMemory& need, const std::vector<ViewRead>& views, int height, int width,
                          int64_t available, const std::string& limit);

}  // namespace lact
