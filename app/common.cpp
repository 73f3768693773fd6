#include "app/common.h"

#include <cstdio>

#include "core/error.h"

namespace lact::app {

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_option("--threads", options.threads, "Worker threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  command.add_option("--backend", options.backend, "Compute backend")->check(CLI::IsMember(backend_names()));
}

std::unique_ptr<Backend> make_backend(const CommonOptions& options) {
  return lact::make_backend(options.backend, options.threads);
}

std::pair<int, int> parse_size(const std::string& text) {
  if (text.empty()) return {0, 0};
  int h = 0, w = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &h, &x, &w, &extra) != 3 || (x != 'x' && x != 'X') || h <= 0 || w <= 0)
    throw Error("--size", "'" + text + "' is not a size like 256x256 (height x width)");
  return {h, w};
}

}  // namespace lact::app
