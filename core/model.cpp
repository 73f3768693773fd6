#include "core/model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "core/encode_stream.h"
#include "core/layers.h"
#include "core/memory_estimate.h"
#include "core/render_graphs.h"
#include "core/tokens.h"
#include "kernels/newton_schulz.h"
#include "system/error.h"
#include "system/mapped_file.h"

namespace lact {

namespace {
constexpr float kLayerNormEps = 1e-5f;

template <typename Named>
std::string describe_tensors(const std::vector<std::pair<std::string, Named>>& tensors) {
  std::string text;
  for (const auto& [name, value] : tensors) {
    if constexpr (std::is_same_v<Named, Tensor>)
      text += (text.empty() ? "" : ", ") + name + " " + shape_string(value.shape());
    else
      text += (text.empty() ? "" : ", ") + name + " " + shape_string(value);
  }
  return text.empty() ? "nothing" : text;
}

// An encoded state that overflowed float (weights or input views too large) would render black images with a
// PSNR of null: refuse it naming the layer. The sum of squares (batched_dot, in double on the backend) is NaN or
// infinite exactly when a value is, since float values squared stay within double.
void check_state_finite(Backend& be, const ModelConfig& config, const SceneState& state) {
  size_t i = 0;
  for (int layer = 0; layer < config.layers; ++layer)
    for (const ModuleConfig& mc : config.block) {
      if (!mc.kind->stateful()) continue;
      for (const auto& [name, tensor] : state.modules.at(i).tensors)
        if (tensor.numel() > 0)
          for (double sum : be.batched_dot(tensor, tensor))
            if (!std::isfinite(sum))
              throw Error("encoded state of layer " + std::to_string(layer) + " (" + mc.type + ", " + name +
                          ") holds NaN or infinity: the model's weights or the input views overflow float32");
      ++i;
    }
}

// Separately held input images (Model::encode of PosedImages): each one holds its size's values, and all share
// view 0's size.
void check_input_images(const std::vector<PosedImage>& inputs) {
  const int height = inputs[0].image.height, width = inputs[0].image.width;
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].camera.validate("input view " + std::to_string(i));
    if (inputs[i].image.rgb.empty()) throw Error("input view " + std::to_string(i) + " has no image");
    if (inputs[i].image.rgb.size() != static_cast<size_t>(inputs[i].image.height) * inputs[i].image.width * 3)
      throw Error("input view " + std::to_string(i) + " has " + std::to_string(inputs[i].image.rgb.size()) +
                  " values for a " + std::to_string(inputs[i].image.height) + "x" +
                  std::to_string(inputs[i].image.width) + " RGB image");
    if (inputs[i].image.height != height || inputs[i].image.width != width)
      throw Error("input view " + std::to_string(i) + " is " + std::to_string(inputs[i].image.height) + "x" +
                  std::to_string(inputs[i].image.width) + " but view 0 is " + std::to_string(height) + "x" +
                  std::to_string(width) + ": all input views must share one size");
  }
}

// Input views as Model::encode takes them: one image per camera, cameras valid, a size the patch divides.
void check_input_views(const std::vector<Camera>& cameras, const PixelView& pixels, int patch) {
  if (cameras.empty()) throw Error("encode needs at least one input view");
  pixels.check("input views");
  if (pixels.count != static_cast<int64_t>(cameras.size()))
    throw Error("input views",
                std::to_string(cameras.size()) + " cameras but " + std::to_string(pixels.count) + " images");
  for (size_t i = 0; i < cameras.size(); ++i) cameras[i].validate("input view " + std::to_string(i));
  if (pixels.height % patch || pixels.width % patch)
    throw Error("input size " + std::to_string(pixels.height) + "x" + std::to_string(pixels.width) +
                " is not divisible by the patch size " + std::to_string(patch));
}

}  // namespace

Model::Model(ModelWeights weights, Backend& backend, ModelOptions options)
    : weights_(std::move(weights)),
      backend_(backend),
      options_(options),
      graphs_(std::make_unique<RenderGraphCache>()) {}

RayPose ray_pose(const Camera& c) {
  RayPose p{};
  p.fx = c.fx, p.fy = c.fy, p.cx = c.cx, p.cy = c.cy;
  for (int j = 0; j < 12; ++j) p.c2w[j] = c.c2w[j];
  return p;
}

Tensor Model::embed(const std::vector<Camera>& cameras, const PixelView& pixels) const {
  // Input views (encode checked them). Rays and patchify run on the backend (a kernel on the GPU): only the
  // poses and pixels travel.
  const int patch = config().patch_size, height = static_cast<int>(pixels.height);
  const int width = static_cast<int>(pixels.width);
  const int64_t count = pixels.count;
  std::vector<RayPose> poses;
  for (const Camera& camera : cameras) poses.push_back(ray_pose(camera));
  std::vector<float> packed;
  // The caller's memory, alive for this call: used in place by a backend that computes in host memory (the
  // CPU's adopt_host), copied once into device memory by the others. Only read (ray_tokens' input).
  const std::shared_ptr<float> borrowed(const_cast<float*>(packed_pixels(pixels, packed)), [](float*) {});
  const Tensor images = backend_.adopt_host({count, height, width, 3}, borrowed);
  const int64_t tokens = count * (height / patch) * (width / patch);
  Tensor patches = backend_.empty({tokens, config().input_channels()});
  backend_.ray_tokens(poses, &images, height, width, patch, patches);
  Tensor x = backend_.empty({tokens, config().dim});
  linear(backend_, patches, weights_.input_linear, x);
  backend_.layer_norm(x, weights_.input_layernorm, kLayerNormEps, x);
  return x;
}

int64_t Model::encode_chunk(int64_t views, int64_t all_views, int height, int width, int64_t chunk_views) const {
  const int64_t patch = config().patch_size;
  const int64_t all_tokens = all_views * (height / patch) * (width / patch);
  if (chunk_views <= 0 || chunk_views >= views || !encode_streams(config(), options_, all_tokens)) return views;
  // Whole tiles of the update where a chunk holds one (the same sums as all at once: core/ttt_module.cpp).
  const int64_t tile = update_tile_views(options_, (height / patch) * (width / patch));
  return chunk_views >= tile ? chunk_views / tile * tile : chunk_views;
}

ResidualStream Model::embed_in_chunks(const std::vector<Camera>& cameras, int64_t chunk, const ChunkPixels& pixels,
                                      ResidualStore* spill) const {
  const int64_t count = static_cast<int64_t>(cameras.size());
  std::vector<float> storage;
  if (chunk >= count) return ResidualStream(embed(cameras, pixels(0, count, storage)));
  std::unique_ptr<ResidualStream> x;
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t end = std::min(count, begin + chunk);
    const std::vector<Camera> part(cameras.begin() + begin, cameras.begin() + end);
    const Tensor rows_of_part = embed(part, pixels(begin, end, storage));
    const int64_t per_view = rows_of_part.dim(0) / (end - begin), dim = rows_of_part.dim(1);
    if (begin == 0)
      x = spill ? std::make_unique<ResidualStream>(backend_, count * per_view, dim, chunk * per_view, *spill)
                : std::make_unique<ResidualStream>(backend_.empty({count * per_view, dim}));
    x->write(begin * per_view, rows_of_part);
  }
  return std::move(*x);
}

ModuleState Model::encode_module(const ModuleContext& context, ResidualStream& stream, int64_t chunk,
                                 bool output_needed) const {
  const BlockModule& module = block_module(*context.config.kind);
  const int64_t per_view = stream.rows() / context.views;
  Tensor y = backend_.empty({std::min(chunk, context.views) * per_view, stream.cols()}, module.input_type(backend_));
  if (chunk < context.views) {
    const ResidualChunks chunks(context, stream, context.weights.norm, kLayerNormEps, per_view, chunk, y);
    return module.encode_streamed(context, chunks, output_needed);
  }
  Tensor& x = stream.whole();
  backend_.layer_norm(x, context.weights.norm, kLayerNormEps, y);
  return module.encode(context, y, x, output_needed);  // x += the module's output
}

SceneState Model::encode(const std::vector<PosedImage>& inputs, const Observer& observer, Collective* collective,
                         int64_t chunk_views, ResidualStore* spill) const {
  if (inputs.empty()) throw Error("encode needs at least one input view");
  const int height = inputs[0].image.height, width = inputs[0].image.width;
  check_input_images(inputs);
  std::vector<Camera> cameras;
  for (const PosedImage& view : inputs) cameras.push_back(view.camera);
  // The separately held images packed a chunk at a time, as the kernels read them (only a chunk's pixels at once).
  const ChunkPixels pixels = [&](int64_t begin, int64_t end, std::vector<float>& storage) {
    storage.clear();
    for (int64_t i = begin; i < end; ++i)
      storage.insert(storage.end(), inputs[i].image.rgb.begin(), inputs[i].image.rgb.end());
    count_input_pixel_copy(static_cast<int64_t>(storage.size() * sizeof(float)));
    return PixelView::packed(storage.data(), end - begin, height, width);
  };
  // The count, size and cameras checked as for caller-held pixels (the descriptor is only checked, not read).
  const auto count = static_cast<int64_t>(inputs.size());
  check_input_views(cameras, PixelView::packed(inputs[0].image.rgb.data(), count, height, width), config().patch_size);
  SceneState state = encode_tokens(cameras, height, width, pixels, observer, collective, chunk_views, spill);
  // The intermediates the backend held for reuse between layers go back now: what follows an encode (writing the
  // state) is not the encode's to hold memory for, and the process's peak stays what the estimate counts.
  backend_.release_held_memory();
  return state;
}

SceneState Model::encode(const std::vector<Camera>& cameras, const PixelView& pixels, const Observer& observer,
                         Collective* collective, int64_t chunk_views, ResidualStore* spill) const {
  check_input_views(cameras, pixels, config().patch_size);
  // A chunk of the caller's views is the same memory seen from its first view on: no copy.
  const ChunkPixels part = [&](int64_t begin, int64_t end, std::vector<float>&) {
    PixelView chunk = pixels;
    chunk.data += begin * pixels.strides[0];
    chunk.count = end - begin;
    return chunk;
  };
  SceneState state = encode_tokens(cameras, static_cast<int>(pixels.height), static_cast<int>(pixels.width), part,
                                   observer, collective, chunk_views, spill);
  backend_.release_held_memory();  // as above
  return state;
}

SceneState Model::encode_tokens(const std::vector<Camera>& cameras, int height, int width, const ChunkPixels& pixels,
                                const Observer& observer, Collective* collective, int64_t chunk_views,
                                ResidualStore* spill) const {
  Backend& be = backend_;
  const int64_t views = static_cast<int64_t>(cameras.size());
  const int64_t all_views = sum_over_ranks(collective, views);
  const int64_t chunk = encode_chunk(views, all_views, height, width, chunk_views);
  if (spill && chunk >= views) spill = nullptr;  // all at once: nothing streamed to keep elsewhere
  if (spill && observer) throw Error("observing an encode needs its residual stream in memory, not spilled");
  check_encode_fits(estimate_encode_memory(config(), options_, views, height, width, all_views, chunk, spill),
                    be.usable_memory(), be.device_description());
  ResidualStream x = embed_in_chunks(cameras, chunk, pixels, spill);
  // The state is allocated a layer at a time and kept: told to the backend after the first layer (its peak plus
  // the state still to come), so that each layer's growth does not push the blocks every layer reuses out of the
  // backend's pool (the first encode of a process mapped 600 blocks more than the next ones).
  const int64_t layer_state_bytes = static_cast<int64_t>(sizeof(float)) * config().state_floats_per_layer(x.rows());
  be.expect_growth(0);
  if (observer) observer("encode_tokens_after_input_layernorm", x.whole());

  SceneState state;
  state.height = height;
  state.width = width;
  state.input_views = static_cast<int>(all_views);
  // Without an observer, nothing after the last stateful module of the last layer is needed.
  size_t last_stateful = 0;
  for (size_t j = 0; j < config().block.size(); ++j)
    if (config().block[j].kind->stateful()) last_stateful = j;

  report_progress("encode layers", 0, config().layers);
  for (int layer = 0; layer < config().layers; ++layer) {
    const bool last_layer = layer + 1 == config().layers;
    for (size_t j = 0; j < config().block.size(); ++j) {
      const ModuleConfig& mc = config().block[j];
      const bool output_needed = observer || !last_layer || j < last_stateful;
      if (!output_needed && !mc.kind->stateful()) continue;
      const ModuleContext context{be, mc, weights_.blocks[layer][j], options_, views, collective};
      ModuleState module_state = encode_module(context, x, chunk, output_needed);
      if (mc.kind->stateful()) state.modules.push_back(std::move(module_state));
    }
    if (observer) observer("encode_block" + std::to_string(layer) + "_out", x.whole());
    if (layer == 0) be.expect_growth(layer_state_bytes * (config().layers - 1));
    report_progress("encode layers", layer + 1, config().layers);
  }
  check_mapped_files_unchanged();  // the weights read in place: nothing from a file changed under us leaves
  check_state_finite(be, config(), state);
  // Fixed from here on (every render reads it): a backend may keep converted copies (core: mark_constant).
  for (const ModuleState& module : state.modules)
    for (const auto& [name, tensor] : module.tensors) backend_.mark_constant(tensor);
  return state;
}

int64_t SceneState::floats() const {
  int64_t total = 0;
  for (const ModuleState& m : modules) total += m.floats();
  return total;
}

void Model::check_state(const SceneState& state) const {
  size_t stateful = 0;
  for (const ModuleConfig& mc : config().block) stateful += mc.kind->stateful();
  const size_t needed = stateful * static_cast<size_t>(config().layers);
  if (state.modules.size() != needed)
    throw Error("scene state has " + std::to_string(state.modules.size()) + " module states, the model needs " +
                std::to_string(needed) + " (encoded with another model?)");
  size_t i = 0;
  for (int layer = 0; layer < config().layers; ++layer)
    for (const ModuleConfig& mc : config().block) {
      const ModuleKind& kind = *mc.kind;
      if (!kind.stateful()) continue;
      const ModuleState& s = state.modules[i++];
      // Input tokens: from the state itself (a KV cache grows with them), checked by the shapes below.
      const int64_t tokens = s.tensors.empty() || s.tensors[0].second.rank() != 3 ? 0 : s.tensors[0].second.dim(1);
      const TensorList expected = kind.state_tensors(config(), mc, tokens);
      bool ok = s.tensors.size() == expected.size();
      for (size_t t = 0; ok && t < expected.size(); ++t)
        ok = s.tensors[t].first == expected[t].first && s.tensors[t].second.shape() == expected[t].second;
      if (!ok)
        throw Error("scene state of layer " + std::to_string(layer) + " (" + mc.type + ") holds " +
                    describe_tensors(s.tensors) + ", the model needs " + describe_tensors(expected) +
                    " (encoded with another model or variant?)");
    }
}

std::vector<Image> Model::render(const SceneState& state, const std::vector<Camera>& cameras) const {
  std::vector<Image> images(cameras.size());
  render_batches(state, cameras, [&](size_t i) {
    Image& image = images[i];
    image.height = cameras[i].height, image.width = cameras[i].width;
    image.rgb.resize(static_cast<size_t>(image.height) * image.width * 3);
    return image.rgb.data();
  });
  return images;
}

void Model::render_into(const SceneState& state, const std::vector<Camera>& cameras, float* out) const {
  render_batches(state, cameras, [&](size_t i) {
    float* image = out;  // called in camera order: the next image starts where this one ends
    out += static_cast<size_t>(cameras[i].height) * cameras[i].width * 3;
    return image;
  });
}

int64_t Model::render_batch_views(int height, int width) const {
  const int patch = config().patch_size;
  return update_tile_views(options_, static_cast<int64_t>(std::max(0, height) / patch) * (std::max(0, width) / patch));
}

void Model::render_batches(const SceneState& state, const std::vector<Camera>& cameras,
                           const std::function<float*(size_t)>& image_out) const {
  check_state(state);
  const int patch = config().patch_size;
  report_progress("render views", 0, cameras.size());
  size_t begin = 0;
  while (begin < cameras.size()) {
    // A batch: consecutive cameras of one size, up to the token tile.
    const int height = cameras[begin].height, width = cameras[begin].width;
    if (height <= 0 || width <= 0 || height % patch || width % patch)
      throw Error("target view " + std::to_string(begin) + " size " + std::to_string(height) + "x" +
                  std::to_string(width) + " is not divisible by the patch size " + std::to_string(patch));
    const size_t most = static_cast<size_t>(render_batch_views(height, width));
    size_t end = begin;
    std::vector<RayPose> poses;
    while (end < cameras.size() && end - begin < most && cameras[end].height == height && cameras[end].width == width) {
      cameras[end].validate("target view " + std::to_string(end));
      poses.push_back(ray_pose(cameras[end]));
      ++end;
    }
    const std::vector<float> rgb = render_batch(state, poses, height, width);
    check_mapped_files_unchanged();  // weights and state read in place: no image from a file changed under us
    for (size_t i = begin; i < end; ++i)
      unpatchify_view(rgb, static_cast<int>(i - begin), height, width, patch, image_out(i));
    begin = end;
    report_progress("render views", end, cameras.size());
  }
}

void Model::report_progress(const char* stage, size_t done, size_t total) const {
  if (!progress_) return;
  if (done) backend_.synchronize();  // queued work (a GPU's) is not work done
  progress_(stage, static_cast<int>(done), static_cast<int>(total));
}

Model::~Model() = default;

std::vector<float> Model::render_batch(const SceneState& state, const std::vector<RayPose>& poses, int height,
                                       int width) const {
  Backend& be = backend_;
  const int64_t count = static_cast<int64_t>(poses.size());
  const int64_t tokens = count * (height / config().patch_size) * (width / config().patch_size);
  const std::vector<float> packed = pack_poses(poses);
  // A recording is not told between layers: a check that threw while recording would end the recordings for
  // good (render_graphs.cpp), and a replay runs every layer in one launch.
  auto record = [&](const Tensor& device_poses, Tensor& rgb) { decode(state, device_poses, height, width, rgb, {}); };
  if (options_.graphs)
    if (std::optional<std::vector<float>> replayed =
            graphs_->render(be, state, packed, count, height, width, tokens, config().output_channels(), record))
      return std::move(*replayed);
  const Tensor device_poses = be.from_host({count, kRayPoseFloats}, packed.data());
  Tensor rgb = be.empty({tokens, config().output_channels()});
  decode(state, device_poses, height, width, rgb, render_layer_check_);
  return be.to_host(rgb);
}

void Model::decode(const SceneState& state, const Tensor& poses, int height, int width, Tensor& rgb,
                   const RenderLayerCheck& between_layers) const {
  Backend& be = backend_;
  const int patch = config().patch_size;
  const int64_t count = poses.dim(0);
  const int64_t tokens = count * (height / patch) * (width / patch);
  Tensor patches = be.empty({tokens, config().input_channels()});
  be.ray_tokens(poses, height, width, patch, patches);
  Tensor x = be.empty({tokens, config().dim});
  linear(be, patches, weights_.input_linear, x);
  patches = Tensor();
  be.layer_norm(x, weights_.input_layernorm, kLayerNormEps, x);
  size_t state_index = 0;
  be.expect_growth(0);  // every layer allocates as the first did: its blocks are kept for the next (backend.h)
  for (int layer = 0; layer < config().layers; ++layer) {
    if (between_layers) between_layers(layer, config().layers);
    for (size_t j = 0; j < config().block.size(); ++j) {
      const ModuleConfig& mc = config().block[j];
      const ModuleContext context{be, mc, weights_.blocks[layer][j], options_, count};
      const BlockModule& module = block_module(*mc.kind);
      Tensor y = be.empty(x.shape(), module.input_type(be));
      be.layer_norm(x, context.weights.norm, kLayerNormEps, y);
      module.render(context, mc.kind->stateful() ? &state.modules[state_index++] : nullptr, y, x);
    }
    if (layer == 0) be.hold_step_blocks();
  }
  Tensor y = be.empty(x.shape());
  be.layer_norm(x, weights_.decoder_norm, kLayerNormEps, y);
  linear(be, y, weights_.decoder_linear, rgb);
  be.sigmoid(rgb);
}

}  // namespace lact
