#include "kernels/cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <string>

#ifndef LACT_CUBLAS_SONAME
#define LACT_CUBLAS_SONAME "libcublas.so"
#endif
#ifndef LACT_CUBLAS_PATH
#define LACT_CUBLAS_PATH LACT_CUBLAS_SONAME
#endif

namespace lact::cuda {

namespace {

template <typename Function>
void resolve(void* handle, const char* symbol, Function& out) {
  out = reinterpret_cast<Function>(dlsym(handle, symbol));
  if (!out) throw std::runtime_error(std::string(LACT_CUBLAS_SONAME ": no symbol ") + symbol);
}

CublasLibrary open_cublas() {
  void* handle = dlopen(LACT_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  std::string why = handle ? "" : dlerror();
  if (!handle) handle = dlopen(LACT_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);  // the toolkit lact was built with
  if (!handle)
    throw std::runtime_error("cannot open cuBLAS (" LACT_CUBLAS_SONAME ", from the CUDA toolkit; add its lib folder "
                             "to LD_LIBRARY_PATH): " + why);
  CublasLibrary lib;  // the handle stays open for the process
  resolve(handle, "cublasCreate_v2", lib.create);
  resolve(handle, "cublasDestroy_v2", lib.destroy);
  resolve(handle, "cublasSetStream_v2", lib.set_stream);
  resolve(handle, "cublasSetMathMode", lib.set_math_mode);
  resolve(handle, "cublasSetWorkspace_v2", lib.set_workspace);
  resolve(handle, "cublasGemmStridedBatchedEx", lib.gemm_strided_batched_ex);
  resolve(handle, "cublasGetStatusString", lib.status_string);
  return lib;
}

}  // namespace

const CublasLibrary& cublas() {
  static std::once_flag once;
  static CublasLibrary library;
  static std::string failure;
  std::call_once(once, [] {
    try {
      library = open_cublas();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw std::runtime_error(failure);
  return library;
}

}  // namespace lact::cuda
