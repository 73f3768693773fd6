// The one list of module kinds. Each NAME in it has its description NAME_kind() (a file in core/kinds/) and its
// forward pass NAME_module() (beside its layer code); both registries are built from this list
// (core/module_kind.cpp's all_module_kinds(), core/block_module.cpp's all_block_modules()), so a kind listed
// here without either definition does not link, and tests/unit/core/test_module_kinds.cpp fails when a definition in
// the sources is missing from the list or a registry pairs a kind with another kind's forward pass.
#pragma once

#include <string>
#include <vector>

// X(NAME) for every kind, in the registries' order.
#define LACT_MODULE_KINDS(X) X(window_attention) X(fast_weight_ttt) X(global_attention) X(mlp)

namespace lact {

class ModuleKind;
class BlockModule;

#define LACT_DECLARE_MODULE_KIND(name) \
  const ModuleKind& name##_kind();     \
  const BlockModule& name##_module();
LACT_MODULE_KINDS(LACT_DECLARE_MODULE_KIND)
#undef LACT_DECLARE_MODULE_KIND

// The list's names, in order ("window_attention", ...).
inline std::vector<std::string> module_kind_names() {
#define LACT_MODULE_KIND_NAME(name) #name,
  return {LACT_MODULE_KINDS(LACT_MODULE_KIND_NAME)};
#undef LACT_MODULE_KIND_NAME
}

}  // namespace lact
