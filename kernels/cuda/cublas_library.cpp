#include "kernels/cuda/cublas_library.h"

#include <mutex>
#include <stdexcept>
#include <string>

#include "system/dynamic_library.h"

#ifndef LACT_CUBLAS_SONAME
#define LACT_CUBLAS_SONAME "libcublas.so"
#endif
#ifndef LACT_CUBLAS_PATH
#define LACT_CUBLAS_PATH LACT_CUBLAS_SONAME
#endif

namespace lact::cuda {

namespace {

CublasLibrary open_cublas() {
  const DynamicLibrary library({LACT_CUBLAS_SONAME, LACT_CUBLAS_PATH},  // the path: the toolkit lact was built with
                               "cuBLAS, from the CUDA toolkit; add its lib folder to LD_LIBRARY_PATH");
  CublasLibrary lib;
  library.resolve("cublasCreate_v2", lib.create);
  library.resolve("cublasDestroy_v2", lib.destroy);
  library.resolve("cublasSetStream_v2", lib.set_stream);
  library.resolve("cublasSetMathMode", lib.set_math_mode);
  library.resolve("cublasSetWorkspace_v2", lib.set_workspace);
  library.resolve("cublasGemmStridedBatchedEx", lib.gemm_strided_batched_ex);
  library.resolve("cublasGetStatusString", lib.status_string);
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
