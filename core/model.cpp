#include "core/model.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/memory_estimate.h"
#include "core/render_graphs.h"
#include "core/tokens.h"
#include "kernels/newton_schulz.h"

namespace lact {

namespace {
constexpr float kLayerNormEps = 1e-5f;

// Runs f(begin, end) over chunks of whole views holding at most `max_tokens` tokens (at least one view).
template <typename F>
void for_view_chunks(int64_t views, int64_t tokens_per_view, int64_t max_tokens, F&& f) {
  const int64_t step = std::max<int64_t>(1, max_tokens / std::max<int64_t>(1, tokens_per_view));
  for (int64_t begin = 0; begin < views; begin += step) f(begin, std::min(views, begin + step));
}
}  // namespace

Model::Model(ModelWeights weights, Backend& backend, ModelOptions options)
    : weights_(std::move(weights)), backend_(backend), options_(options), graphs_(std::make_unique<RenderGraphCache>()) {}

RayPose ray_pose(const Camera& c) {
  RayPose p{};
  p.fx = c.fx, p.fy = c.fy, p.cx = c.cx, p.cy = c.cy;
  for (int j = 0; j < 12; ++j) p.c2w[j] = c.c2w[j];
  return p;
}

Tensor Model::embed(const std::vector<PosedImage>& views, int height, int width) const {
  // Input views (encode checked their images). Rays and patchify run on the backend (a kernel on the GPU):
  // only the poses and pixels travel.
  const int patch = config().patch_size;
  const int64_t count = static_cast<int64_t>(views.size());
  std::vector<RayPose> poses;
  std::vector<float> pixels;
  pixels.reserve(static_cast<size_t>(count) * height * width * 3);
  for (const PosedImage& view : views) {
    poses.push_back(ray_pose(view.camera));
    pixels.insert(pixels.end(), view.image.rgb.begin(), view.image.rgb.end());
  }
  const int64_t tokens = count * (height / patch) * (width / patch);
  Tensor patches = backend_.empty({tokens, config().input_channels()});
  const Tensor images = backend_.from_host({count, height, width, 3}, pixels.data());
  backend_.ray_tokens(poses, &images, height, width, patch, patches);
  Tensor x = backend_.empty({tokens, config().dim});
  linear(backend_, patches, weights_.input_linear, x);
  backend_.layer_norm(x, weights_.input_layernorm, kLayerNormEps, x);
  return x;
}

SceneState Model::encode(const std::vector<PosedImage>& inputs, const Observer& observer) const {
  if (inputs.empty()) throw Error("encode needs at least one input view");
  const int height = inputs[0].image.height, width = inputs[0].image.width, patch = config().patch_size;
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
  if (height <= 0 || width <= 0 || height % patch || width % patch)
    throw Error("input size " + std::to_string(height) + "x" + std::to_string(width) +
                " is not divisible by the patch size " + std::to_string(patch));

  Backend& be = backend_;
  const int64_t views = static_cast<int64_t>(inputs.size());
  check_encode_fits(estimate_encode_memory(config(), options_, views, height, width), be.available_memory(),
                    be.device_description());
  const int64_t per_view = static_cast<int64_t>(height / patch) * (width / patch);
  Tensor x = embed(inputs, height, width);
  const int64_t tokens = x.dim(0), dim = x.dim(1);
  if (observer) observer("encode_tokens_after_input_layernorm", x);

  SceneState state;
  state.height = height;
  state.width = width;
  state.input_views = static_cast<int>(views);
  // Without an observer, nothing after the last state-producing module of the last layer is needed.
  size_t last_stateful = 0;
  for (size_t j = 0; j < config().block.size(); ++j)
    if (config().block[j].kind == ModuleKind::FastWeightTTT || config().block[j].kind == ModuleKind::GlobalAttention)
      last_stateful = j;

  Tensor y = be.empty({tokens, dim}), out = be.empty({tokens, dim});
  for (int layer = 0; layer < config().layers; ++layer) {
    const bool last_layer = layer + 1 == config().layers;
    for (size_t j = 0; j < config().block.size(); ++j) {
      const ModuleConfig& mc = config().block[j];
      const ModuleWeights& mw = weights_.blocks[layer][j];
      const bool output_needed = observer || !last_layer || j < last_stateful;
      if (!output_needed && mc.kind != ModuleKind::FastWeightTTT && mc.kind != ModuleKind::GlobalAttention) continue;
      be.layer_norm(x, mw.norm, kLayerNormEps, y);
      switch (mc.kind) {
        case ModuleKind::WindowAttention:
          for_view_chunks(views, per_view, options_.token_tile, [&](int64_t b, int64_t e) {
            Tensor o = out.slice(b * per_view, e * per_view);
            window_attention(be, mc, mw, y.slice(b * per_view, e * per_view), e - b, o);
          });
          break;
        case ModuleKind::Mlp:
          for_view_chunks(tokens, 1, options_.token_tile, [&](int64_t b, int64_t e) {
            Tensor o = out.slice(b, e);
            mlp(be, mc, mw, y.slice(b, e), o);
          });
          break;
        case ModuleKind::GlobalAttention:
          state.kv_caches.push_back(global_attention_encode(be, mc, mw, y, out));
          break;
        case ModuleKind::FastWeightTTT: {
          const TttProjections p = ttt_project(be, mc, mw, y, true);
          state.fast_weights.push_back(ttt_update(be, mc, mw, p, options_.newton_schulz, options_.token_tile));
          if (output_needed) ttt_apply(be, mc, mw, state.fast_weights.back(), p.q, options_.token_tile, out);
          break;
        }
      }
      if (output_needed) be.add(x, out);
    }
    if (observer) observer("encode_block" + std::to_string(layer) + "_out", x);
  }
  return state;
}

void Model::check_state(const SceneState& state) const {
  const size_t fast = static_cast<size_t>(config().layers) * config().ttt_modules_per_block();
  const size_t caches = static_cast<size_t>(config().layers) * config().global_attention_modules_per_block();
  if (state.fast_weights.size() != fast || state.kv_caches.size() != caches)
    throw Error("scene state has " + std::to_string(state.fast_weights.size()) + " fast-weight sets and " +
                std::to_string(state.kv_caches.size()) + " KV caches, the model needs " + std::to_string(fast) +
                " and " + std::to_string(caches) + " (encoded with another model?)");
  size_t i = 0, c = 0;
  for (int layer = 0; layer < config().layers; ++layer)
    for (size_t j = 0; j < config().block.size(); ++j) {
      const ModuleConfig& mc = config().block[j];
      const ModuleWeights& mw = weights_.blocks[layer][j];
      if (mc.kind == ModuleKind::FastWeightTTT) {
        const FastWeights& f = state.fast_weights[i++];
        if (f.w0.shape() != mw.w0.shape() || f.w1.shape() != mw.w1.shape() || f.w2.shape() != mw.w2.shape())
          throw Error("scene state fast weights of layer " + std::to_string(layer) + " have shape " +
                      shape_string(f.w0.shape()) + ", the model needs " + shape_string(mw.w0.shape()));
      } else if (mc.kind == ModuleKind::GlobalAttention) {
        const KvCache& kv = state.kv_caches[c++];
        const Shape expected{mc.heads(config().dim), kv.k.rank() == 3 ? kv.k.dim(1) : 0, mc.head_dim};
        if (kv.k.shape() != expected || kv.v.shape() != expected)
          throw Error("scene state KV cache of layer " + std::to_string(layer) + " has shape " +
                      shape_string(kv.k.shape()) + ", the model needs [" + std::to_string(expected[0]) + ", tokens, " +
                      std::to_string(expected[2]) + "]");
      }
    }
}

std::vector<Image> Model::render(const SceneState& state, const std::vector<Camera>& cameras) const {
  check_state(state);
  const int patch = config().patch_size;
  std::vector<Image> images;
  images.reserve(cameras.size());
  size_t begin = 0;
  while (begin < cameras.size()) {
    // A batch: consecutive cameras of one size, up to the token tile.
    const int height = cameras[begin].height, width = cameras[begin].width;
    if (height <= 0 || width <= 0 || height % patch || width % patch)
      throw Error("target view " + std::to_string(begin) + " size " + std::to_string(height) + "x" +
                  std::to_string(width) + " is not divisible by the patch size " + std::to_string(patch));
    const int64_t per_view = static_cast<int64_t>(height / patch) * (width / patch);
    const size_t most = static_cast<size_t>(std::max<int64_t>(1, options_.token_tile / per_view));
    size_t end = begin;
    std::vector<RayPose> poses;
    while (end < cameras.size() && end - begin < most && cameras[end].height == height && cameras[end].width == width) {
      cameras[end].validate("target view " + std::to_string(end));
      poses.push_back(ray_pose(cameras[end]));
      ++end;
    }
    const int64_t count = static_cast<int64_t>(poses.size());
    std::vector<Image> batch = unpatchify(render_batch(state, poses, height, width), static_cast<int>(count), height,
                                          width, patch);
    for (Image& img : batch) images.push_back(std::move(img));
    begin = end;
  }
  return images;
}

Model::~Model() = default;

std::vector<float> Model::render_batch(const SceneState& state, const std::vector<RayPose>& poses, int height,
                                       int width) const {
  Backend& be = backend_;
  const int64_t count = static_cast<int64_t>(poses.size());
  const int64_t tokens = count * (height / config().patch_size) * (width / config().patch_size);
  const std::vector<float> packed = pack_poses(poses);
  auto decode_into = [&](const Tensor& device_poses, Tensor& rgb) { decode(state, device_poses, height, width, rgb); };
  if (options_.graphs)
    if (std::optional<std::vector<float>> replayed = graphs_->render(be, state, packed, count, height, width, tokens,
                                                                     config().output_channels(), decode_into))
      return std::move(*replayed);
  const Tensor device_poses = be.from_host({count, kRayPoseFloats}, packed.data());
  Tensor rgb = be.empty({tokens, config().output_channels()});
  decode_into(device_poses, rgb);
  return be.to_host(rgb);
}

void Model::decode(const SceneState& state, const Tensor& poses, int height, int width, Tensor& rgb) const {
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
  const int64_t dim = x.dim(1);
  Tensor y = be.empty({tokens, dim}), out = be.empty({tokens, dim});
  size_t fast_index = 0, cache_index = 0;
  for (int layer = 0; layer < config().layers; ++layer)
    for (size_t j = 0; j < config().block.size(); ++j) {
      const ModuleConfig& mc = config().block[j];
      const ModuleWeights& mw = weights_.blocks[layer][j];
      be.layer_norm(x, mw.norm, kLayerNormEps, y);
      switch (mc.kind) {
        case ModuleKind::WindowAttention:
          window_attention(be, mc, mw, y, count, out);
          break;
        case ModuleKind::Mlp:
          mlp(be, mc, mw, y, out);
          break;
        case ModuleKind::GlobalAttention:
          global_attention_render(be, mc, mw, state.kv_caches[cache_index++], y, count, out);
          break;
        case ModuleKind::FastWeightTTT: {
          const TttProjections p = ttt_project(be, mc, mw, y, false);
          ttt_apply(be, mc, mw, state.fast_weights[fast_index++], p.q, options_.token_tile, out);
          break;
        }
      }
      be.add(x, out);
    }
  be.layer_norm(x, weights_.decoder_norm, kLayerNormEps, y);
  linear(be, y, weights_.decoder_linear, rgb);
  be.sigmoid(rgb);
}

}  // namespace lact
