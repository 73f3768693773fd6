// The backend a run asks for (--threads, --device, --precision, --no-graphs), shared by the `lact` subcommands
// and the viewer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "kernels/backend.h"
#include "kernels/backend_factory.h"

namespace lact {

struct CommonOptions {
  int threads = 0;                   // 0 = the usable CPUs other running work leaves (default_threads)
  std::string backend = "cpu";       // --device (or --backend): cpu | cuda
  std::string precision = "fp32";    // matrix products: fp32 | tf32 | bf16 (the latter two on cuda)
  bool no_graphs = false;            // render with direct launches instead of replaying CUDA graphs
  std::string distributed = "none";  // none | mpi | nccl (pipeline/distribution.h)
  double memory_limit_gb = 0;        // the most memory a scene may take in this process (0: what is free)
  std::string scratch_dir;           // --scratch: where an encode that does not fit keeps its residual stream
  double max_seconds = 0;            // refuse work estimated to take longer (0: no limit; pipeline/time_estimate.h)
  std::string device_named;          // how a backend's refusal names the device: "--device cuda" when empty
};
std::unique_ptr<Backend> make_backend(const CommonOptions& options);

// The CPUs this process may use: --threads above it runs that many, with a note (more threads than CPUs only
// cost memory and time; 10000 threads can hang a machine).
int max_threads();

// The largest --memory-limit (GB), and the flag's value in bytes (-1 for 0, "what is free"); NaN, infinities
// and negative values are an Error naming the flag.
constexpr double kMaxMemoryLimitGb = 1e6;
int64_t memory_limit_bytes(double gb);

}  // namespace lact
