#include "core/block_module.h"

#include <algorithm>

#include "core/error.h"

namespace lact {

namespace {

// The registry: every kind the engine runs. A new kind is one more line here.
const std::vector<const BlockModule*>& all_modules() {
  static const std::vector<const BlockModule*> modules = {&window_attention_module(), &fast_weight_ttt_module(),
                                                          &global_attention_module(), &mlp_module()};
  return modules;
}

}  // namespace

const Tensor& ModuleState::at(const std::string& name) const {
  for (const auto& [key, tensor] : tensors)
    if (key == name) return tensor;
  throw Error("scene state has no tensor '" + name + "' for this module");
}

int64_t ModuleState::floats() const {
  int64_t total = 0;
  for (const auto& entry : tensors) total += entry.second.numel();
  return total;
}

const BlockModule& block_module(ModuleKind kind) {
  for (const BlockModule* m : all_modules())
    if (m->kind() == kind) return *m;
  throw Error("internal: no implementation registered for a block module kind");
}

const BlockModule* block_module_by_class(const std::string& class_name) {
  for (const BlockModule* m : all_modules())
    if (class_name == m->class_name()) return m;
  return nullptr;
}

std::string known_module_classes() {
  std::string list;
  for (const BlockModule* m : all_modules()) list += (list.empty() ? "" : ", ") + std::string(m->class_name());
  return list;
}

void refuse_unknown_params(const nlohmann::json& params, const std::vector<std::string>& known,
                           const std::string& module, const std::string& where) {
  for (const auto& item : params.items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end())
      throw Error(where,
                  module + " param '" + item.key().substr(0, 60) +
                      "' is not implemented in lact (it would change the numbers; refusing rather than ignoring it)");
}

long long ModelConfig::state_floats_per_layer(int64_t input_tokens) const {
  long long total = 0;
  for (const ModuleConfig& m : block)
    for (const auto& [name, shape] : block_module(m.kind).state_tensors(*this, m, input_tokens)) {
      long long n = 1;
      for (int64_t d : shape) n *= d;
      total += n;
    }
  return total;
}

}  // namespace lact
