// The LaCT model: encode (input views -> per-layer fast weights) and render (state + cameras -> images).
// No I/O here: views come in as pixels and cameras, images go out as floats.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/block_module.h"
#include "core/camera.h"
#include "core/encode_stream.h"
#include "core/model_options.h"
#include "core/pixel_view.h"
#include "core/weights.h"
#include "kernels/backend.h"

namespace lact {

// The scene state: what each stateful module's encode left (core/block_module.h), layer-major: the updated
// fast weights of every TTT module (all three for the baseline, W1 for the variants), the KV cache of every
// GlobalAttention module.
struct SceneState {
  std::vector<ModuleState> modules;
  int height = 0, width = 0;  // the input views' size
  int input_views = 0;
  int64_t floats() const;
};

// A camera as the token builder takes it.
RayPose ray_pose(const Camera& camera);

class RenderGraphCache;

class Model {
 public:
  // Called with named intermediate tensors (the fixture's names): "encode_tokens_after_input_layernorm",
  // "encode_block{i}_out". Observing makes encode compute the last layer's outputs too.
  using Observer = std::function<void(const std::string& name, const Tensor& value)>;
  // Told how far encode and render are: ("encode layers", layers done, layers) from 0 on, and ("render views",
  // views done, views) after each batch; the backend is synchronised first, so the count is work finished. For
  // a progress bar (the caller does any I/O); none by default.
  using WorkProgress = std::function<void(const char* stage, int done, int total)>;
  // Told before each layer of every render batch, (layers done in this batch, layers), as the layers' work is
  // queued: not synchronised (on a GPU the layers before may still run), so that checking costs no wait. It may
  // throw to stop the render there: the exception leaves render, with the images of the batches done written,
  // the model and the state as they were. A recorded render (CUDA graphs, core/render_graphs.h) runs its layers
  // in one launch and is not told. For a stop check (the caller reads any signal); none by default.
  using RenderLayerCheck = std::function<void(int layers_done, int layers)>;

  Model(ModelWeights weights, Backend& backend, ModelOptions options = {});
  ~Model();
  Model(Model&&) = default;

  const ModelConfig& config() const { return weights_.config; }
  const ModelWeights& weights() const { return weights_; }
  Backend& backend() const { return backend_; }
  const ModelOptions& options() const { return options_; }

  // With a collective, `inputs` are this rank's share of the input views (consecutive, in rank order) and every
  // rank returns the same state: the one a single process would encode from all of them.
  // With `chunk_views` (more than 0, fewer than the inputs) the views are taken in chunks of that many within
  // each layer where every module can (encode_streams, core/block_module.h): the same state within float
  // rounding, with only the residual stream growing with the views (core/memory_estimate.h); otherwise all at once.
  // With `spill` as well, the residual stream of a streamed encode is kept there instead of in memory (only a
  // chunk's rows at once): the same state, bit for bit, as the streamed encode in memory. Not with an observer.
  SceneState encode(const std::vector<PosedImage>& inputs, const Observer& observer = {},
                    Collective* collective = nullptr, int64_t chunk_views = 0, ResidualStore* spill = nullptr) const;
  // The same for views whose pixels the caller holds, one image per camera: read in place when packed (on the
  // CPU no copy at all; another backend copies them once into its memory), else packed once on the host.
  SceneState encode(const std::vector<Camera>& cameras, const PixelView& pixels, const Observer& observer = {},
                    Collective* collective = nullptr, int64_t chunk_views = 0, ResidualStore* spill = nullptr) const;
  // The chunk encode() takes for `chunk_views` of `views` input views (`all_views` across ranks) at height x width:
  // `views` when it encodes them all at once; else whole tiles of the TTT update (update_tile_views) where it
  // holds one, so that the state is the one all the views at once leave.
  int64_t encode_chunk(int64_t views, int64_t all_views, int height, int width, int64_t chunk_views) const;
  // Renders every camera (any size divisible by the patch; views are batched up to the token tile).
  // The most views of height x width one render batch takes (up to a token tile, at least one): render() renders
  // consecutive cameras of one size in batches of this many.
  int64_t render_batch_views(int height, int width) const;
  std::vector<Image> render(const SceneState& state, const std::vector<Camera>& cameras) const;
  void set_progress(WorkProgress progress) { progress_ = std::move(progress); }
  void set_render_layer_check(RenderLayerCheck check) { render_layer_check_ = std::move(check); }
  // The same written into `out`: the images one after another in camera order, each its camera's height x width
  // x 3 floats. Reads the model and the state only: two threads may render at once where the backend allows it.
  void render_into(const SceneState& state, const std::vector<Camera>& cameras, float* out) const;

 private:
  // The pixels of input views [begin, end): caller-held memory seen from view `begin`, or packed into `storage`.
  using ChunkPixels = std::function<PixelView(int64_t begin, int64_t end, std::vector<float>& storage)>;
  Tensor embed(const std::vector<Camera>& cameras, const PixelView& pixels) const;
  // embed() of `chunk` views at a time into the rows of one tensor (only a chunk's pixels and patches at once).
  // With `spill`, the rows go there (a chunk's buffer in memory).
  ResidualStream embed_in_chunks(const std::vector<Camera>& cameras, int64_t chunk, const ChunkPixels& pixels,
                                 ResidualStore* spill) const;
  // Both encode()s: the views embedded, then every layer over them, all at once or in chunks of views.
  SceneState encode_tokens(const std::vector<Camera>& cameras, int height, int width, const ChunkPixels& pixels,
                           const Observer& observer, Collective* collective, int64_t chunk_views,
                           ResidualStore* spill) const;
  // One module of one layer over x (its output added into x), all at once or (chunk < views) in chunks of views.
  ModuleState encode_module(const ModuleContext& context, ResidualStream& x, int64_t chunk, bool output_needed) const;
  // render(), render_into(): image i written at image_out(i), called once per camera in order.
  void render_batches(const SceneState& state, const std::vector<Camera>& cameras,
                      const std::function<float*(size_t)>& image_out) const;
  void check_state(const SceneState& state) const;
  // One batch of target views of one size: the rgb patches [views * (H/p)(W/p), p*p*3] on the host.
  std::vector<float> render_batch(const SceneState& state, const std::vector<RayPose>& poses, int height,
                                  int width) const;
  // Target tokens from poses in backend memory -> layers -> decoder -> sigmoid into rgb. No host traffic,
  // so that it can be recorded; `between_layers` (the render layer check, or none while recording) is told
  // before each layer.
  void decode(const SceneState& state, const Tensor& poses, int height, int width, Tensor& rgb,
              const RenderLayerCheck& between_layers) const;

  ModelWeights weights_;
  Backend& backend_;
  ModelOptions options_;
  WorkProgress progress_;
  RenderLayerCheck render_layer_check_;
  void report_progress(const char* stage, size_t done, size_t total) const;
  std::unique_ptr<RenderGraphCache> graphs_;  // core/render_graphs.h
};

}  // namespace lact
