#include "app/suggestions.h"

#include <algorithm>

namespace lact::app {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> long_flags(const CLI::App& command) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : command.get_options())
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  return flags;
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3;  // at most 2 edits
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance && 2 * d < word.size()) best = candidate, best_distance = d;
  }
  return best;
}

std::string parse_error_suggestion(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2) return "";
  const std::vector<std::string> commands = subcommand_names(app);
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return "";
  if (std::find(commands.begin(), commands.end(), first) == commands.end()) {
    const std::string guess = nearest_name(first, commands);
    return "'" + first + "' is not a lact command" + (guess.empty() ? "" : "; did you mean '" + guess + "'?");
  }
  const std::vector<const CLI::App*> named =
      app.get_subcommands([&first](const CLI::App* sub) { return sub->get_name() == first; });
  if (named.empty()) return "";
  const std::vector<std::string> flags = long_flags(*named[0]);
  for (int i = 2; i < argc; ++i) {
    std::string word = argv[i];
    word = word.substr(0, word.find('='));
    if (word.rfind("--", 0) != 0 || std::find(flags.begin(), flags.end(), word) != flags.end()) continue;
    const std::string guess = nearest_name(word, flags);
    return first + ": there is no flag " + word + (guess.empty() ? "" : "; did you mean " + guess + "?");
  }
  return "";
}

}  // namespace lact::app
