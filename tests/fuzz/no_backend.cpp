// The fuzz targets parse files and never run an op: kernels/backend.cpp's factory is linked without the CPU
// backend (and its OpenBLAS), so asking for one fails loudly.
#include <stdexcept>

#include "kernels/backend.h"

namespace lact {

std::unique_ptr<Backend> make_cpu_backend(int) {
  throw std::logic_error("the fuzz build has no backend: a fuzz target tried to run an op");
}

}  // namespace lact
