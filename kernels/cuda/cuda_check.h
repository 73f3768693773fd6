// Checks for every CUDA runtime and cuBLAS call: a failure throws with the call, the file and the line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cublas_library.h"

namespace lact::cuda {

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorString(status) + " (" + call + " at " + file +
                             ":" + std::to_string(line) + ")");
}

inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error: ") + cublas().status_string(status) + " (" + call + " at " +
                             file + ":" + std::to_string(line) + ")");
}

}  // namespace lact::cuda

#define LACT_CUDA_CHECK(call) ::lact::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define LACT_CUBLAS_CHECK(call) ::lact::cuda::check_cublas((call), #call, __FILE__, __LINE__)
