#include "app/suggestions.h"

#include <algorithm>
#include <cstdlib>

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

// "--name" and "-n" of each of the command's options.
std::vector<std::string> command_flags(const CLI::App& command) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
  }
  return flags;
}

// What other tools call lact's flags (PyTorch scripts, nerfstudio, web servers), each with what lact takes
// instead; a word with two rows names the first whose flag the command has. The edit distance finds typos, not
// these, and its nearest name for some was a wrong guess ("--gpu": "--fps", "--host": "--port").
struct FlagSynonym {
  const char *word, *instead;
};
// clang-format off
constexpr FlagSynonym kFlagSynonyms[] = {
    {"--host", "--bind"}, {"--address", "--bind"}, {"--listen", "--bind"}, {"--ip", "--bind"},
    {"--output", "--out"}, {"--out", "--output"}, {"-o", "--out"},
    {"--output-dir", "--out"}, {"--output-dir", "--output"}, {"--outdir", "--out"}, {"--outdir", "--output"},
    {"--gpu", "--device cuda"}, {"--cuda", "--device cuda"}, {"--cpu", "--device cpu"},
    {"--checkpoint", "--model"}, {"--ckpt", "--model"}, {"--weights", "--model"}, {"-m", "--model"},
    {"--dataset", "--data"}, {"--data-dir", "--data"}, {"-d", "--data"},
    {"--resolution", "--size"}, {"--res", "--size"}, {"--image-size", "--size"},
    {"--num-threads", "--threads"}, {"--jobs", "--threads"}, {"-j", "--threads"},
    {"--dtype", "--precision"}, {"--bf16", "--precision bf16"}, {"--tf32", "--precision tf32"},
    {"--input-views", "--inputs"}, {"--target-views", "--targets"}, {"--test-views", "--targets"},
    {"--num-frames", "--frames"}, {"--overwrite", "--force"}, {"-f", "--force"}};
// clang-format on

// What the command takes instead of `word` (a flag it lacks), or empty when the table does not know it.
std::string synonym_of(const std::string& word, const std::vector<std::string>& flags) {
  for (const FlagSynonym& s : kFlagSynonyms) {
    const std::string instead = s.instead, flag = instead.substr(0, instead.find(' '));
    if (word == s.word && std::find(flags.begin(), flags.end(), flag) != flags.end()) return instead;
  }
  return "";
}

// "-10", "-1e9", "-inf", "-nan": a negative number given as a value, not a flag.
bool is_number(const std::string& word) {
  if (word.empty()) return false;
  char* end = nullptr;
  std::strtod(word.c_str(), &end);
  return end == word.c_str() + word.size();
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 3;  // at most 2 edits
  // The name's own letters, not a flag's dashes, set how many edits are a typo: "--gpu" is not "--fps".
  const size_t letters = word.size() - std::min(word.find_first_not_of('-'), word.size());
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance && 2 * d < letters) best = candidate, best_distance = d;
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
  const std::vector<std::string> flags = command_flags(*named[0]);
  bool value_next = false;  // the word before was a flag that takes a value ("--elevation -inf": not a flag)
  for (int i = 2; i < argc; ++i) {
    const std::string given = argv[i], word = given.substr(0, given.find('='));
    const bool is_value = value_next || is_number(word);
    const CLI::Option* option = word.rfind("-", 0) == 0 ? named[0]->get_option_no_throw(word) : nullptr;
    value_next = option && option->get_items_expected_min() > 0 && word.size() == given.size();
    if (is_value || word.size() < 2 || word[0] != '-' || option) continue;
    std::string guess = synonym_of(word, flags);
    if (guess.empty()) guess = nearest_name(word, flags);
    return first + ": there is no flag " + word + (guess.empty() ? "" : "; did you mean " + guess + "?");
  }
  return "";
}

}  // namespace lact::app
