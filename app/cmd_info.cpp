// lact info: what a model or a scene state file holds.
#include <cstdio>

#include "app/commands.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/weights.h"

namespace lact::app {

namespace {

const char* kind_name(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::WindowAttention: return "window attention";
    case ModuleKind::FastWeightTTT: return "large-chunk TTT (SwiGLU fast weights)";
    case ModuleKind::Mlp: return "MLP";
  }
  return "?";
}

void print_config(const ModelConfig& c) {
  std::printf("config: patch %d, dim %d, layers %d\n", c.patch_size, c.dim, c.layers);
  for (size_t j = 0; j < c.block.size(); ++j) {
    const ModuleConfig& m = c.block[j];
    std::printf("  module %zu: %s", j, kind_name(m.kind));
    if (m.kind == ModuleKind::WindowAttention)
      std::printf(", %d heads x %d, qk norm %s", m.heads(c.dim), m.head_dim, m.use_qk_norm ? "on" : "off");
    if (m.kind == ModuleKind::FastWeightTTT)
      std::printf(", %d fast-weight head(s) x %d, hidden %d, base lr %g, Newton-Schulz steps %d", m.heads(c.dim),
                  m.head_dim, m.hidden(c.dim), m.base_lr, m.muon_update_steps);
    if (m.kind == ModuleKind::Mlp) std::printf(", hidden %d", m.hidden(c.dim));
    std::printf("\n");
  }
  const long long fast = c.fast_weight_floats_per_layer() * c.layers;
  std::printf("fast weights: %lld floats per layer, %lld in all (%.1f MiB per scene state in fp32)\n",
              c.fast_weight_floats_per_layer(), fast, fast * 4.0 / (1 << 20));
}

void run_info(const std::string& path) {
  const SafetensorsFile file(path);
  const auto& meta = file.metadata();
  auto config_text = meta.find("config");
  if (config_text == meta.end()) throw Error(path, "no config in the metadata: not a lact model or scene state");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(config_text->second);
  } catch (const nlohmann::json::exception&) {
    throw Error(path, "__metadata__.config is not valid JSON");
  }
  const ModelConfig config = parse_model_config(json, path);
  long long count = 0;
  for (const auto& [name, entry] : file.entries()) {
    long long n = 1;
    for (int64_t d : entry.shape) n *= d;
    count += n;
  }
  auto format = meta.find("format");
  const bool is_state = format != meta.end() && format->second.rfind("lact scene state", 0) == 0;
  std::printf("%s: %s\n", path.c_str(), is_state ? "scene state" : "model");
  print_config(config);
  if (is_state) {
    for (const char* key : {"model", "data", "scene", "inputs", "height", "width", "input_views"}) {
      auto it = meta.find(key);
      if (it != meta.end()) std::printf("%s: %s\n", key, it->second.c_str());
    }
    std::printf("tensors: %zu, %lld floats\n", file.entries().size(), count);
  } else {
    std::printf("parameters: %lld (%.1f M) in %zu tensors\n", count, count / 1e6, file.entries().size());
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand("info", "Print the config, parameter count and fast-weight size of a model "
                                                 "or scene state");
  command->add_option("file", *path, "Model or scene state (.safetensors)")->required();
  command->callback([path]() { run_info(*path); });
}

}  // namespace lact::app
