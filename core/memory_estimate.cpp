#include "core/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/module_kind.h"
#include "kernels/cpu/dnnl_gemm.h"
#include "system/error.h"
#include "system/host_memory.h"

namespace lact {

namespace {
constexpr double kFloat = sizeof(float);

// A byte or element count as int64, saturated (the largest value means "more than any machine has").
int64_t saturate(double value) {
  constexpr double kMax = 9.0e18;  // below INT64_MAX (9.22e18), exactly representable as a double
  return value >= kMax ? static_cast<int64_t>(kMax) : static_cast<int64_t>(value);
}

// GiB, or MiB below 0.1 GiB (small scenes and small --memory-limit values stay readable).
std::string gib(int64_t bytes) { return memory_size_text(bytes); }

std::string size_text(int64_t height, int64_t width) { return std::to_string(height) + "x" + std::to_string(width); }
}  // namespace

EncodeMemory estimate_encode_memory(const ModelConfig& config, const ModelOptions& options, int64_t views, int height,
                                    int width, int64_t state_views, int64_t chunk_views, bool spill_residual) {
  // Counted in double so that no flag (--size 8x2147483640, 2e9 views) can overflow it; saturated at the end.
  const int64_t patch = std::max(1, config.patch_size);
  const double dim = config.dim;
  const double per_view =
      static_cast<double>(std::max(0, height) / patch) * static_cast<double>(std::max(0, width) / patch);
  views = std::max<int64_t>(0, views);
  const double tokens = static_cast<double>(views) * per_view;
  chunk_views = chunk_views <= 0 ? views : std::min(views, chunk_views);
  const double part = static_cast<double>(chunk_views) * per_view;  // the tokens the layers take at once
  const double tile = static_cast<double>(std::max<int64_t>(1, options.token_tile));
  // Token-wise modules run on chunks of whole views of at most `tile` tokens (at least one view).
  const double chunk = std::min(part, std::max(1.0, std::floor(tile / std::max(1.0, per_view))) * per_view);

  EncodeMemory m;
  m.tokens = saturate(tokens);
  m.chunk_views = chunk_views;
  // Embedding: the input pixels, their ray tokens and the embedded tokens of a chunk alive together (and, when
  // streamed, the residual stream they are copied into).
  const bool spilled = spill_residual && part < tokens;
  const double stream = part < tokens ? (spilled ? part : tokens) * dim : 0.0;
  m.embedding = saturate((part * (3.0 * patch * patch + config.input_channels() + dim) + stream) * kFloat);
  // The residual stream x (spilled: a chunk of it and its host copy), and y of a chunk (each module adds its
  // output into x itself).
  m.activations = saturate(((spilled ? 2 * part : tokens) + part) * dim * kFloat);
  m.spilled = spilled ? saturate(tokens * dim * kFloat) : 0;

  double scratch = 0;
  for (const ModuleConfig& mc : config.block)
    scratch = std::max(
        scratch, part < tokens ? mc.kind->streamed_encode_scratch_floats(config, mc, options, part, per_view, chunk)
                               : mc.kind->encode_scratch_floats(config, mc, options, part, per_view, chunk));
  m.temporaries = saturate(scratch * kFloat);
  double state = 0;  // in double: a KV cache of a saturated token count must not overflow
  const double state_tokens = state_views < 0 ? tokens : static_cast<double>(state_views) * per_view;
  for (const ModuleConfig& mc : config.block)
    for (const auto& entry : mc.kind->state_tensors(config, mc, saturate(state_tokens))) {
      double floats = 1;
      for (int64_t side : entry.second) floats *= static_cast<double>(side);
      state += floats;
    }
  m.state = saturate(state * config.layers * kFloat);
  return m;
}

namespace {
// Bytes of a block of `floats` as the CPU backend allocates it (do_empty: rounded up to 64 bytes), which is what
// its pool matches a held block by.
int64_t block_bytes(double floats) { return saturate(std::ceil(floats * kFloat / 64.0) * 64.0); }

// The blocks alive together in each step of one render batch (Model::decode): embedding (the rgb output, the ray
// tokens, x), then each module of a layer (the rgb output, x, the module's y and its own blocks).
std::vector<std::vector<double>> render_steps(const ModelConfig& config, const ModelOptions& options,
                                              const RenderBatch& batch, bool ray_tokens_held) {
  const int64_t patch = std::max(1, config.patch_size);
  const double per_view =
      static_cast<double>(std::max(0, batch.height) / patch) * static_cast<double>(std::max(0, batch.width) / patch);
  const double tokens = static_cast<double>(std::max<int64_t>(0, batch.views)) * per_view, dim = config.dim;
  const double rgb = tokens * config.output_channels(), x = tokens * dim;
  // The ray tokens are freed before the layers: a block of their own size, held through them unless evicted.
  std::vector<std::vector<double>> steps = {{rgb, x, ray_tokens_held ? tokens * config.input_channels() : 0.0}};
  for (const ModuleConfig& mc : config.block) {
    std::vector<double> step = {rgb, x, x};  // x and the module's input y
    for (double floats : mc.kind->render_block_floats(config, mc, options, tokens, per_view)) step.push_back(floats);
    steps.push_back(std::move(step));
  }
  return steps;
}

// What the CPU backend's blocks may take at once over these batches: it maps a block only when it holds none of
// that size, so of each size there are at most as many as were ever alive at once (kernels/cpu/block_pool.h).
// `first_ray_tokens`: whether the first batch's ray tokens count (the others' always do).
double held_block_bytes(const ModelConfig& config, const ModelOptions& options, const std::vector<RenderBatch>& batches,
                        bool first_ray_tokens) {
  std::map<int64_t, int> most;  // block bytes -> the most alive at once in any step
  for (size_t i = 0; i < batches.size(); ++i)
    for (const std::vector<double>& step : render_steps(config, options, batches[i], i > 0 || first_ray_tokens)) {
      std::map<int64_t, int> alive;
      for (double floats : step) ++alive[block_bytes(floats)];
      for (const auto& [bytes, count] : alive) most[bytes] = std::max(most[bytes], count);
    }
  double bytes = 0;
  for (const auto& [size, count] : most) bytes += double(size) * count;
  return bytes;
}
}  // namespace

EncodeMemory estimate_render_memory(const ModelConfig& config, const ModelOptions& options, int64_t views, int height,
                                    int width, bool layer_blocks_held, const RenderPool& pool) {
  EncodeMemory m = estimate_encode_memory(config, options, views, height, width);  // its state and token count
  const int64_t patch = std::max(1, config.patch_size);
  const double per_view =
      static_cast<double>(std::max(0, height) / patch) * static_cast<double>(std::max(0, width) / patch);
  const double tokens = static_cast<double>(std::max<int64_t>(0, views)) * per_view, dim = config.dim;
  const double rgb = tokens * config.output_channels();  // Model::render_batch's output, alive to its end
  m.embedding = saturate((rgb + tokens * config.input_channels() + tokens * dim) * kFloat);
  m.activations = saturate((rgb + tokens * dim) * kFloat);
  double sum = 0, largest = 0;
  for (const ModuleConfig& mc : config.block) {
    for (double floats : mc.kind->render_block_floats(config, mc, options, tokens, per_view)) sum += floats;
    sum += tokens * dim;
    // Elsewhere (a GPU: the CUDA attention's split fallback adds to the packed op's buffers) the encode's scratch
    // of one chunk of all the tokens bounds a module's render.
    largest =
        std::max(largest, tokens * dim + mc.kind->encode_scratch_floats(config, mc, options, tokens, per_view, tokens));
  }
  if (!layer_blocks_held) {
    m.temporaries = saturate(largest * kFloat);
    return m;
  }
  std::vector<RenderBatch> batches = {{views, height, width}};
  batches.insert(batches.end(), pool.batches.begin(), pool.batches.end());
  const double held = held_block_bytes(config, options, batches, !pool.alone) - double(m.activations);
  m.temporaries = saturate(std::max(0.0, std::min(sum * kFloat, held)));
  return m;
}

int64_t render_first_layer_bytes(const ModelConfig& config, const ModelOptions& options, int64_t views, int height,
                                 int width) {
  const EncodeMemory m = estimate_render_memory(config, options, views, height, width, false);
  return saturate(double(m.embedding) + double(m.state) + double(m.tokens) * config.dim * kFloat);
}

int64_t cpu_operand_bytes(const ModelConfig& config, const ModelOptions& options, bool bf16, int64_t views, int height,
                          int width, int64_t chunk_views) {
  const int64_t patch = std::max(1, config.patch_size);
  const double per_view =
      static_cast<double>(std::max(0, height) / patch) * static_cast<double>(std::max(0, width) / patch);
  views = std::max<int64_t>(0, views);
  const double part = per_view * static_cast<double>(chunk_views <= 0 ? views : std::min(views, chunk_views));
  const double tile = std::min(part, static_cast<double>(std::max<int64_t>(1, options.token_tile)));
  // A: the tokens of a layer's projections, or a token tile of a module's inner width; B: a weight, or a
  // tile of the TTT update's inner width.
  double inner = config.dim, weight = 0;
  for (const ModuleConfig& mc : config.block) {
    inner = std::max<double>(inner, mc.kind->hidden(mc, config.dim));
    for (const auto& entry : mc.kind->tensors(config, mc)) {
      double floats = 1;
      for (int64_t side : entry.second) floats *= static_cast<double>(side);
      weight = std::max(weight, floats);
    }
  }
  if (!bf16) {  // a token tile of K (dim wide) or of a hidden activation, copied transposed for a d x hidden C
    double copied = 0;
    for (const ModuleConfig& mc : config.block) {
      const int64_t hidden = mc.kind->hidden(mc, config.dim);
      if (fp32_copies_transposed_a(config.dim, hidden))
        copied = std::max<double>(copied, tile * std::max<int64_t>(config.dim, hidden));
    }
    return saturate(4.0 * copied);
  }
  // The packed buffers only grow (thread-local, kernels/cpu/dnnl_gemm.cpp), so A is also the largest chunk of
  // embedded pixel tokens (input_channels wide: 12 p^2, 768 at patch 8, far above dim in the small models).
  const double a = std::max({part * config.dim, tile * inner, part * config.input_channels()});
  const double b = std::max(weight, tile * inner);
  return saturate(2.0 * (a + b));
}

int64_t cpu_embed_operand_bytes(const ModelConfig& config, bool bf16, int64_t views, int height, int width,
                                int64_t chunk_views) {
  if (!bf16) return 0;  // fp32 products read the pixel tokens in place
  const int64_t patch = std::max(1, config.patch_size);
  const double per_view =
      static_cast<double>(std::max(0, height) / patch) * static_cast<double>(std::max(0, width) / patch);
  views = std::max<int64_t>(0, views);
  const double part = per_view * static_cast<double>(chunk_views <= 0 ? views : std::min(views, chunk_views));
  return saturate(2.0 * part * config.input_channels());
}

void check_encode_fits(const EncodeMemory& need, int64_t available, const std::string& device, const char* doing,
                       const char* advice) {
  if (available < 0 || need.total() <= available) return;
  throw Error(std::string(doing) + " " + std::to_string(need.tokens) + " tokens needs about " + gib(need.total()) +
              (need.process > 0 ? " in all (the process and model " + gib(need.process) + ", " : " (") +
              "activations " + gib(need.activations) + ", scratch " + gib(need.temporaries) + ", state " +
              gib(need.state) + (need.views > 0 ? ", views " + gib(need.views) : "") + ") but " + device + " has " +
              gib(available) + (need.process > 0 ? " available for the process" : " available") + ": " + advice);
}

int64_t kept_view_bytes(int64_t views, int height, int width) {
  return saturate(double(std::max<int64_t>(0, views)) * std::max(0, height) * std::max(0, width) * 3 * kFloat);
}

int64_t ViewReadMemory::total() const { return saturate(double(kept) + double(largest_view)); }

std::pair<int64_t, int64_t> cover_size(const ViewRead& view, int height, int width) {
  const double w = std::max<int64_t>(1, view.width), h = std::max<int64_t>(1, view.height);
  const double scale = std::max(width / w, height / h);
  return {std::max<int64_t>(height, std::llround(h * scale)), std::max<int64_t>(width, std::llround(w * scale))};
}

ViewReadMemory estimate_view_read_memory(const std::vector<ViewRead>& views, int height, int width) {
  ViewReadMemory m;
  m.kept = kept_view_bytes(static_cast<int64_t>(views.size()), height, width);
  for (size_t i = 0; i < views.size(); ++i) {
    const ViewRead& v = views[i];
    const auto [rh, rw] = cover_size(v, height, width);
    const bool resized = rw != v.width || rh != v.height;
    const double bytes = double(v.width) * double(v.height) * (4 + 4 * kFloat + (v.undistorted ? 4 * kFloat : 0)) +
                         (resized ? double(rw) * double(rh) * 4 * kFloat : 0.0);
    if (saturate(bytes) > m.largest_view) m.largest_view = saturate(bytes), m.view = static_cast<int>(i);
  }
  return m;
}

void check_view_read_fits(const ViewReadMemory& need, const std::vector<ViewRead>& views, int height, int width,
                          int64_t available, const std::string& limit) {
  if (available < 0 || need.total() <= available) return;
  std::string what = "reading " + std::to_string(views.size()) + " view(s) needs about " + gib(need.total());
  if (need.view >= 0 && static_cast<size_t>(need.view) < views.size()) {
    const ViewRead& v = views[need.view];
    const auto [rh, rw] = cover_size(v, height, width);
    if (rw != v.width || rh != v.height)
      what += " (a " + size_text(v.height, v.width) + " image resized to " + size_text(rh, rw) + " to cover it)";
  }
  throw Error(what + " but " + gib(available) + " is available (" + limit + "): use a smaller size or fewer views");
}

}  // namespace lact
