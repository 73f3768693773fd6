#include "core/weights.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include "core/camera.h"
#include "core/error.h"
#include "core/safetensors.h"

namespace lact {

std::vector<std::pair<std::string, Shape>> expected_tensors(const ModelConfig& c) {
  const int64_t dim = c.dim;
  std::vector<std::pair<std::string, Shape>> names;
  names.push_back({"input_linear.weight", {dim, c.input_channels()}});
  names.push_back({"input_layernorm.weight", {dim}});
  for (int layer = 0; layer < c.layers; ++layer) {
    for (size_t j = 0; j < c.block.size(); ++j) {
      const ModuleConfig& m = c.block[j];
      const std::string prefix = "blocks." + std::to_string(layer) + ".module_list." + std::to_string(j) + ".";
      names.push_back({prefix + "ln.weight", {dim}});
      const int64_t hidden = m.hidden(c.dim);
      switch (m.kind) {
        case ModuleKind::WindowAttention:
        case ModuleKind::GlobalAttention:
          names.push_back({prefix + "f.to_qkv.weight", {3 * dim, dim}});
          names.push_back({prefix + "f.c_proj.weight", {dim, dim}});
          if (m.use_qk_norm) {
            names.push_back({prefix + "f.q_norm.weight", {m.head_dim}});
            names.push_back({prefix + "f.k_norm.weight", {m.head_dim}});
          }
          break;
        case ModuleKind::FastWeightTTT: {
          const int64_t heads = m.heads(c.dim), d = m.head_dim;
          names.push_back({prefix + "f.w0", {heads, d, hidden}});
          names.push_back({prefix + "f.w1", {heads, hidden, d}});
          names.push_back({prefix + "f.w2", {heads, d, hidden}});
          names.push_back({prefix + "f.to_qkv.weight", {3 * dim, dim}});
          names.push_back({prefix + "f.c_proj.weight", {dim, dim}});
          names.push_back({prefix + "f.lr_fc.weight", {3 * heads, dim}});
          names.push_back({prefix + "f.lr_fc.bias", {3 * heads}});
          names.push_back({prefix + "f.o_norm.weight", {d}});
          break;
        }
        case ModuleKind::Mlp:
          names.push_back({prefix + "f.c_fc.weight", {hidden, dim}});
          names.push_back({prefix + "f.c_proj.weight", {dim, hidden}});
          break;
      }
    }
  }
  names.push_back({"image_token_decoder.0.weight", {dim}});
  names.push_back({"image_token_decoder.1.weight", {c.output_channels(), dim}});
  return names;
}

ModelWeights build_model_weights(const ModelConfig& config, Backend& be,
                                 const std::function<std::vector<float>(const std::string&, const Shape&)>& read,
                                 const std::string& source) {
  ModelWeights w;
  w.config = config;
  w.source = source;
  auto get = [&](const std::string& name, const Shape& shape) {
    std::vector<float> values = read(name, shape);
    w.parameter_count += static_cast<long long>(values.size());
    return be.from_host(shape, values.data());
  };
  const auto names = expected_tensors(config);
  auto shape_of = [&](const std::string& name) {
    for (const auto& [n, s] : names)
      if (n == name) return s;
    return Shape{};
  };
  auto load = [&](const std::string& name) { return get(name, shape_of(name)); };

  w.input_linear = load("input_linear.weight");
  w.input_layernorm = load("input_layernorm.weight");
  for (int layer = 0; layer < config.layers; ++layer) {
    std::vector<ModuleWeights> modules;
    for (size_t j = 0; j < config.block.size(); ++j) {
      const ModuleConfig& m = config.block[j];
      const std::string prefix = "blocks." + std::to_string(layer) + ".module_list." + std::to_string(j) + ".";
      ModuleWeights mw;
      mw.norm = load(prefix + "ln.weight");
      switch (m.kind) {
        case ModuleKind::WindowAttention:
        case ModuleKind::GlobalAttention:
          mw.qkv = load(prefix + "f.to_qkv.weight");
          mw.out_proj = load(prefix + "f.c_proj.weight");
          if (m.use_qk_norm) {
            mw.q_norm = load(prefix + "f.q_norm.weight");
            mw.k_norm = load(prefix + "f.k_norm.weight");
          }
          break;
        case ModuleKind::FastWeightTTT: {
          mw.w0 = load(prefix + "f.w0");
          mw.w1 = load(prefix + "f.w1");
          mw.w2 = load(prefix + "f.w2");
          mw.qkv = load(prefix + "f.to_qkv.weight");
          mw.out_proj = load(prefix + "f.c_proj.weight");
          mw.lr_weight = load(prefix + "f.lr_fc.weight");
          mw.lr_bias = load(prefix + "f.lr_fc.bias");
          mw.o_norm = load(prefix + "f.o_norm.weight");
          const int64_t heads = mw.w0.dim(0);
          mw.w0_norms = be.empty({heads, mw.w0.dim(2)});
          mw.w1_norms = be.empty({heads, mw.w1.dim(2)});
          mw.w2_norms = be.empty({heads, mw.w2.dim(2)});
          be.column_norms(mw.w0, mw.w0_norms);
          be.column_norms(mw.w1, mw.w1_norms);
          be.column_norms(mw.w2, mw.w2_norms);
          break;
        }
        case ModuleKind::Mlp:
          mw.fc = load(prefix + "f.c_fc.weight");
          mw.out_proj = load(prefix + "f.c_proj.weight");
          break;
      }
      modules.push_back(std::move(mw));
    }
    w.blocks.push_back(std::move(modules));
  }
  w.decoder_norm = load("image_token_decoder.0.weight");
  w.decoder_linear = load("image_token_decoder.1.weight");
  return w;
}

namespace {

// What the model was trained with (metadata image_size "HxW", input_views), checked like any other input.
void read_training_metadata(const SafetensorsFile& file, ModelWeights& weights) {
  const std::string& path = file.path();
  auto size = file.metadata().find("image_size");
  if (size != file.metadata().end() && !size->second.empty() &&
      !parse_image_size(size->second, weights.trained_height, weights.trained_width))
    throw Error(path, "metadata image_size '" + size->second.substr(0, 40) + "' is not HxW with sides in 1.." +
                          std::to_string(kMaxImageSide));
  auto views = file.metadata().find("input_views");
  if (views != file.metadata().end() && !views->second.empty()) {
    const std::string& text = views->second;
    if (text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) < 1)
      throw Error(path, "metadata input_views '" + text.substr(0, 40) + "' is not a count in 1..9999");
    weights.trained_input_views = std::stoi(text);
  }
}

}  // namespace

ModelWeights load_model(const std::string& path, Backend& be) {
  const SafetensorsFile file(path);
  const ModelConfig config = config_from_metadata(file);
  // Every module has at least two tensors: a config declaring more modules than the file could hold is
  // refused before anything is sized from it.
  const uint64_t modules = static_cast<uint64_t>(config.layers) * config.block.size();
  if (2 * modules > file.entries().size())
    throw Error(path, "the config declares " + std::to_string(config.layers) + " layers of " +
                          std::to_string(config.block.size()) + " modules but the file holds only " +
                          std::to_string(file.entries().size()) + " tensors");

  std::set<std::string> expected;
  for (const auto& [name, shape] : expected_tensors(config)) expected.insert(name);
  for (const auto& [name, entry] : file.entries())
    if (!expected.count(name))
      throw Error(path, "unexpected tensor '" + name + "': the weights do not match the config in the metadata");
  ModelWeights trained;
  read_training_metadata(file, trained);

  auto read = [&](const std::string& name, const Shape& shape) {
    const SafetensorsEntry& e = file.entry(name);
    if (e.shape != shape)
      throw Error(path, "tensor '" + name + "' has shape " + shape_string(e.shape) + ", the config needs " +
                            shape_string(shape));
    std::vector<float> values = file.read_floats(name);
    for (float v : values)
      if (!std::isfinite(v)) throw Error(path, "tensor '" + name + "' contains NaN or infinite values");
    return values;
  };
  ModelWeights weights = build_model_weights(config, be, read, path);
  weights.trained_height = trained.trained_height;
  weights.trained_width = trained.trained_width;
  weights.trained_input_views = trained.trained_input_views;
  return weights;
}

}  // namespace lact
