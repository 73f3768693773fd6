#include "core/block_module.h"

#include "core/kinds/kind_list.h"
#include "system/error.h"

namespace lact {

// The registry of forward passes: every kind of core/kinds/kind_list.h, in its order.
const std::vector<const BlockModule*>& all_block_modules() {
#define LACT_KIND_FORWARD_PASS(name) &name##_module(),
  static const std::vector<const BlockModule*> modules = {LACT_MODULE_KINDS(LACT_KIND_FORWARD_PASS)};
#undef LACT_KIND_FORWARD_PASS
  return modules;
}

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

ModuleState BlockModule::encode_streamed(const ModuleContext&, const ViewChunks& chunks, bool output_needed) const {
  if (kind().stateful() && chunks.count() > 1)  // a stateless kind's state is empty on every chunk alike
    throw Error(std::string("internal: ") + kind().class_name() + " cannot encode in chunks of views");
  ModuleState state;
  chunks.each(
      [&](const ModuleContext& chunk, const Tensor& y, Tensor& out) { state = encode(chunk, y, out, output_needed); },
      output_needed);
  return state;
}

bool encode_streams(const ModelConfig& config, const ModelOptions& options, int64_t tokens) {
  for (const ModuleConfig& mc : config.block)
    if (!block_module(*mc.kind).streams(mc, options, tokens)) return false;
  return true;
}

const BlockModule& block_module(const ModuleKind& kind) {
  for (const BlockModule* m : all_block_modules())
    if (&m->kind() == &kind) return *m;
  throw Error(std::string("internal: no forward pass registered for the module kind ") + kind.class_name());
}

}  // namespace lact
