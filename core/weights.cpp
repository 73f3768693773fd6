#include "core/weights.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include "core/block_module.h"
#include "core/camera.h"
#include "core/safetensors.h"
#include "system/error.h"

namespace lact {

void ModuleWeights::throw_kind_mismatch() { throw Error("internal: a module's weights asked for as another kind's"); }

namespace {
std::string module_prefix(int layer, size_t j) {
  return "blocks." + std::to_string(layer) + ".module_list." + std::to_string(j) + ".";
}
}  // namespace

std::vector<std::pair<std::string, Shape>> expected_tensors(const ModelConfig& c) {
  const int64_t dim = c.dim;
  std::vector<std::pair<std::string, Shape>> names;
  names.push_back({"input_linear.weight", {dim, c.input_channels()}});
  names.push_back({"input_layernorm.weight", {dim}});
  for (int layer = 0; layer < c.layers; ++layer)
    for (size_t j = 0; j < c.block.size(); ++j) {
      const std::string prefix = module_prefix(layer, j);
      names.push_back({prefix + "ln.weight", {dim}});
      for (const auto& [name, shape] : c.block[j].kind->tensors(c, c.block[j])) names.push_back({prefix + name, shape});
    }
  names.push_back({"image_token_decoder.0.weight", {dim}});
  names.push_back({"image_token_decoder.1.weight", {c.output_channels(), dim}});
  return names;
}

ModelWeights build_model_weights(const ModelConfig& config, Backend& be,
                                 const std::function<Tensor(const std::string&, const Shape&)>& read,
                                 const std::string& source) {
  ModelWeights w;
  w.config = config;
  w.source = source;
  const auto names = expected_tensors(config);
  auto load = [&](const std::string& name) {
    Shape shape;
    for (const auto& [n, s] : names)
      if (n == name) shape = s;
    Tensor values = read(name, shape);
    be.mark_constant(values);
    w.parameter_count += static_cast<long long>(values.numel());
    return values;
  };

  w.input_linear = load("input_linear.weight");
  w.input_layernorm = load("input_layernorm.weight");
  for (int layer = 0; layer < config.layers; ++layer) {
    std::vector<ModuleWeights> modules;
    for (size_t j = 0; j < config.block.size(); ++j) {
      const std::string prefix = module_prefix(layer, j);
      ModuleWeights mw;
      mw.norm = load(prefix + "ln.weight");
      mw.own = block_module(*config.block[j].kind).load(be, config.block[j], [&](const std::string& name) {
        return load(prefix + name);
      });
      modules.push_back(std::move(mw));
    }
    w.blocks.push_back(std::move(modules));
  }
  w.decoder_norm = load("image_token_decoder.0.weight");
  w.decoder_linear = load("image_token_decoder.1.weight");
  return w;
}

namespace {

// What the model was trained with (metadata image_size "HxW", input_views, kind), checked like any other input.
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
  auto kind = file.metadata().find("kind");
  if (kind != file.metadata().end() && !kind->second.empty()) {
    if (kind->second != "object" && kind->second != "scene")
      throw Error(path, "metadata kind '" + kind->second.substr(0, 40) + "' is neither object nor scene");
    weights.trained_kind = kind->second;
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
    return file.load_tensor(be, name, shape, "the config");
  };
  ModelWeights weights = build_model_weights(config, be, read, path);
  weights.identity = file.content_identity();  // after the weights were read: their pages are in memory
  weights.trained_height = trained.trained_height;
  weights.trained_width = trained.trained_width;
  weights.trained_input_views = trained.trained_input_views;
  weights.trained_kind = trained.trained_kind;
  return weights;
}

}  // namespace lact
