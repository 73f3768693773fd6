#include "pipeline/backend_options.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/camera.h"
#include "core/error.h"

namespace lact {

std::unique_ptr<Backend> make_backend(const CommonOptions& options) {
  try {
    auto backend = lact::make_backend(options.backend, options.threads, parse_precision(options.precision));
    if (options.no_graphs) backend->disable_recording();
    if (options.memory_limit_gb > 0) backend->set_memory_cap(static_cast<int64_t>(options.memory_limit_gb * (1 << 30)));
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

}  // namespace lact
