#include "kernels/backend_factory.h"

#include <stdexcept>

#include "kernels/cpu/dnnl_gemm.h"

#ifdef LACT_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace lact {

std::vector<std::string> backend_names() {
#ifdef LACT_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

bool backend_available(const std::string& name, std::string* why) {
  if (name == "cpu") return true;
#ifdef LACT_HAVE_CUDA
  if (name == "cuda") {
    std::string reason;
    if (cuda_device_count(&reason) > 0) return true;
    if (why) *why = "no usable CUDA device (" + reason + ")";
    return false;
  }
#endif
  if (why) *why = "this build has no backend '" + name + "'";
  return false;
}

std::unique_ptr<Backend> make_backend(const std::string& name, int threads, Precision precision) {
  if (name == "cpu") {
    if (precision == Precision::Tf32)
      throw std::invalid_argument("the cpu backend has no tf32 (fp32, or bf16 where the CPU has bf16 instructions)");
    std::string why;
    if (precision == Precision::Bf16 && !cpu_bf16_available(&why)) throw std::invalid_argument(why);
    return make_cpu_backend(threads, precision);
  }
#ifdef LACT_HAVE_CUDA
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {  // cuda:N picks the device (one per rank under NCCL)
    std::string why;
    if (!backend_available("cuda", &why)) throw std::invalid_argument("cuda backend: " + why);
    int device = 0;
    if (name != "cuda") {
      const std::string index = name.substr(5);
      if (index.empty() || index.size() > 3 || index.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(index) >= cuda_device_count())
        throw std::invalid_argument("no CUDA device '" + index.substr(0, 8) + "' (this machine has " +
                                    std::to_string(cuda_device_count()) + ")");
      device = std::stoi(index);
    }
    return make_cuda_backend(device, precision);
  }
  throw std::invalid_argument("unknown backend '" + name + "' (this build has: cpu, cuda)");
#else
  if (name == "cuda")
    throw std::invalid_argument(
        "this build of lact has no cuda backend (nvcc was not found when it was configured; "
        "see -DLACT_CUDA)");
  throw std::invalid_argument("unknown backend '" + name + "' (this build has: cpu)");
#endif
}

}  // namespace lact
