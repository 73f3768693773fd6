#include "app/command_line.h"

#include <set>

#include "system/file_io.h"

namespace lact::app {

namespace {

// "--model", "-o" or the positional name: how the message names the option.
std::string option_name(const CLI::Option& option) {
  if (!option.get_lnames().empty()) return "--" + option.get_lnames()[0];
  if (!option.get_snames().empty()) return "-" + option.get_snames()[0];
  return option.get_name(true);
}

std::string joined(const std::vector<std::string>& values) {
  std::string text;
  for (const std::string& v : values) text += (text.empty() ? "" : " ") + v;
  return text;
}

}  // namespace

RunDigest command_line_digest(const CLI::App& command) {
  static const std::set<std::string> kPerNode = {"--help", "--threads", "--memory-limit", "--quiet"};
  static const std::set<std::string> kRead = {"--model", "--data", "--state", "--path", "--images", "--lpips"};
  static const std::set<std::string> kWritten = {"--out", "--output", "--video"};
  RunDigest digest;
  digest.add("the subcommand", command.get_name());
  for (const CLI::Option* option : command.get_options()) {
    const std::string name = option_name(*option);
    const bool given = option->count() > 0;
    if (kPerNode.count(name)) continue;
    if (kRead.count(name)) {
      digest.add(name, given ? "given" : "not given");
    } else if (kWritten.count(name)) {
      const std::string value = given ? joined(option->results()) : option->get_default_str();
      digest.add(name, value.empty() ? "not given" : absolute_path(value));
    } else {
      digest.add(name, given ? joined(option->results()) : "not given");
    }
  }
  return digest;
}

}  // namespace lact::app
