#include "app/common.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/camera.h"
#include "core/error.h"

namespace lact::app {

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_option("--threads", options.threads, "Worker threads (0 = all cores; at most " +
                                                       std::to_string(max_threads()) + " here, 4 per core)")
      ->check(CLI::Range(0, max_threads()));
  command.add_option("--device,--backend", options.backend, "Compute device: cpu, or cuda where built with CUDA")
      ->check(CLI::IsMember(backend_names()));
  command.add_option("--precision", options.precision,
                     "Matrix products in fp32, tf32 or bf16 (bf16/tf32 operands, fp32 accumulation; cuda only)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  command.add_flag("--no-graphs", options.no_graphs, "Render with direct kernel launches, not replayed CUDA graphs");
}

std::unique_ptr<Backend> make_backend(const CommonOptions& options) {
  try {
    auto backend = lact::make_backend(options.backend, options.threads, parse_precision(options.precision));
    if (options.no_graphs) backend->disable_recording();
    return backend;
  } catch (const std::invalid_argument& e) {
    throw Error("--device " + options.backend, e.what());
  }
}

int max_threads() { return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::pair<int, int> parse_size(const std::string& text) {
  if (text.empty()) return {0, 0};
  int h = 0, w = 0;
  if (!parse_image_size(text, h, w))
    throw Error("--size", "'" + text.substr(0, 40) + "' is not a size like 256x256 (height x width, each 1.." +
                              std::to_string(kMaxImageSide) + ")");
  return {h, w};
}

}  // namespace lact::app
