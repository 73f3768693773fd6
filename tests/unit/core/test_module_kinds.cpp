// The module kinds' one list (core/kinds/kind_list.h) against the sources and both registries: every kind whose
// description (NAME_kind()) or forward pass (NAME_module()) is defined under core/ is in the list, and the
// description registry (all_module_kinds) and the forward-pass registry (all_block_modules) hold the same kinds
// in the list's order, each forward pass serving its own kind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/block_module.h"
#include "core/kinds/kind_list.h"
#include "core/module_kind.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

// The NAMEs of every definition `const TYPE& NAME_SUFFIX() {` in the C++ files under core/.
std::set<std::string> defined_names(const std::string& type, const std::string& suffix) {
  const std::regex definition("^const " + type + "& ([a-z0-9_]+)_" + suffix + R"(\(\) \{)");
  std::set<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(LACT_SOURCE_DIR) / "core")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream file(entry.path());
    for (std::string line; std::getline(file, line);) {
      std::smatch m;
      if (std::regex_search(line, m, definition)) names.insert(m[1]);
    }
  }
  return names;
}

TEST(ModuleKinds, EveryDefinedKindIsInTheList) {
  const std::vector<std::string> listed = module_kind_names();
  const std::set<std::string> list(listed.begin(), listed.end());
  ASSERT_EQ(list.size(), listed.size()) << "a name twice in core/kinds/kind_list.h";
  const std::set<std::string> descriptions = defined_names("ModuleKind", "kind");
  const std::set<std::string> forward_passes = defined_names("BlockModule", "module");
  ASSERT_FALSE(descriptions.empty()) << "no NAME_kind() definition found under " << LACT_SOURCE_DIR << "/core";
  EXPECT_EQ(descriptions, list) << "a description (NAME_kind() in core/kinds/) missing from the list";
  EXPECT_EQ(forward_passes, list) << "a forward pass (NAME_module()) missing from the list";
}

TEST(ModuleKinds, BothRegistriesHoldEveryKindInTheListsOrder) {
  const std::vector<std::string> names = module_kind_names();
  const std::vector<const ModuleKind*>& kinds = all_module_kinds();
  const std::vector<const BlockModule*>& modules = all_block_modules();
  ASSERT_EQ(kinds.size(), names.size());
  ASSERT_EQ(modules.size(), names.size());
  std::set<std::string> classes;
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(&modules[i]->kind(), kinds[i]) << "the forward pass registered for another kind";
    EXPECT_EQ(&block_module(*kinds[i]), modules[i]);
    EXPECT_EQ(module_kind_by_class(kinds[i]->class_name()), kinds[i]);
    EXPECT_TRUE(classes.insert(kinds[i]->class_name()).second) << "two kinds named " << kinds[i]->class_name();
  }
  EXPECT_EQ(module_kind_by_class("NoSuchModule"), nullptr);
}

// The four kinds the engine has today, by their official class names: the list's order is the registries'.
TEST(ModuleKinds, TheOfficialClassNames) {
  std::vector<std::string> classes;
  for (const ModuleKind* k : all_module_kinds()) classes.push_back(k->class_name());
  EXPECT_EQ(classes,
            (std::vector<std::string>{"SelfAttention", "FastWeightGluMLPMultihead", "GlobalAttention", "MLP"}));
  EXPECT_EQ(known_module_classes(), "SelfAttention, FastWeightGluMLPMultihead, GlobalAttention, MLP");
}

}  // namespace
}  // namespace lact
