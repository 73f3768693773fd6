// The fuzz targets parse files and never run an op: kernels/backend.cpp's factory is linked without the CPU
// backend (and its OpenBLAS, oneDNN), so asking for one fails loudly.
#include <stdexcept>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/dnnl_gemm.h"

namespace lact {

std::unique_ptr<Backend> make_cpu_backend(int, Precision, CpuGemmLibrary) {
  throw std::logic_error("the fuzz build has no backend: a fuzz target tried to run an op");
}

bool cpu_bf16_available(std::string* why) {
  if (why) *why = "the fuzz build has no backend";
  return false;
}

}  // namespace lact
