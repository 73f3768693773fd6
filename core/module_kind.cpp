#include "core/module_kind.h"

#include <algorithm>

#include "core/kinds/kind_list.h"
#include "system/error.h"

namespace lact {

// The registry of descriptions: every kind of core/kinds/kind_list.h, in its order.
const std::vector<const ModuleKind*>& all_module_kinds() {
#define LACT_KIND_DESCRIPTION(name) &name##_kind(),
  static const std::vector<const ModuleKind*> kinds = {LACT_MODULE_KINDS(LACT_KIND_DESCRIPTION)};
#undef LACT_KIND_DESCRIPTION
  return kinds;
}

const ModuleKind* module_kind_by_class(const std::string& class_name) {
  for (const ModuleKind* k : all_module_kinds())
    if (class_name == k->class_name()) return k;
  return nullptr;
}

std::string known_module_classes() {
  std::string list;
  for (const ModuleKind* k : all_module_kinds()) list += (list.empty() ? "" : ", ") + std::string(k->class_name());
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

void check_head_dim(int head_dim, int dim, const std::string& where) {
  if (head_dim <= 0 || dim % head_dim != 0)
    throw Error(where, "head_dim " + std::to_string(head_dim) + " does not divide dim " + std::to_string(dim));
}

void check_inter_multi(double inter_multi, int hidden, const std::string& where) {
  if (!(inter_multi > 0 && inter_multi <= ConfigLimits::kMaxInterMulti) || hidden <= 0)
    throw Error(where, "inter_multi must be in (0, " + std::to_string(int(ConfigLimits::kMaxInterMulti)) +
                           "] and give a positive hidden width");
}

int ModuleConfig::heads(int dim) const { return kind->heads(*this, dim); }
int ModuleConfig::hidden(int dim) const { return kind->hidden(*this, dim); }

void ModuleConfig::throw_params_mismatch() const {
  throw Error("internal: the params of module '" + type + "' asked for as another kind's");
}

long long ModelConfig::state_floats_per_layer(int64_t input_tokens) const {
  long long total = 0;
  for (const ModuleConfig& m : block)
    for (const auto& [name, shape] : m.kind->state_tensors(*this, m, input_tokens)) {
      long long n = 1;
      for (int64_t d : shape) n *= d;
      total += n;
    }
  return total;
}

}  // namespace lact
