#include "pipeline/backend_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/camera.h"
#include "kernels/backend_factory.h"
#include "pipeline/backend_environment.h"
#include "system/error.h"
#include "system/host_memory.h"
#include "system/thread_limit.h"

namespace lact {

int64_t memory_limit_bytes(double gb) {
  // Checked here as well as by the flag's parser: NaN passes every range comparison and would turn the cap off.
  if (!std::isfinite(gb) || gb < 0 || gb > kMaxMemoryLimitGb)
    throw Error("--memory-limit", "must be a number of GB from 0 (what is free) to " +
                                      std::to_string(static_cast<int>(kMaxMemoryLimitGb)));
  return gb > 0 ? std::max<int64_t>(1, static_cast<int64_t>(gb * double(1 << 30))) : -1;
}

std::unique_ptr<Backend> make_backend(const CommonOptions& options) {
  const int64_t cap = memory_limit_bytes(options.memory_limit_gb);
  check_backend_environment();  // before the backend: the same line on every device, not only where CUDA reads it
  if (options.threads < 0) throw Error("--threads", "must be 0 (every usable CPU) or more");
  std::string note;
  // Unasked, the CPUs other work leaves free now (system/thread_limit.h); asked, that many (at most the CPUs).
  const int threads = options.threads == 0 ? default_threads() : threads_to_use(options.threads, note);
  if (!note.empty()) std::fprintf(stderr, "lact: note: %s\n", note.c_str());
  try {
    auto backend = lact::make_backend(options.backend, threads, parse_precision(options.precision));
    if (options.no_graphs) backend->disable_recording();
    backend->set_memory_cap(cap);
    set_host_memory_cap(cap);
    return backend;
  } catch (const std::invalid_argument& e) {
    throw Error(options.device_named.empty() ? "--device " + options.backend : options.device_named, e.what());
  }
}

int max_threads() { return usable_cpus(); }

}  // namespace lact
