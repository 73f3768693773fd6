// cuBLAS opened when the first CUDA backend is made (dlopen), not linked: linking it runs libcublasLt's
// initialisers at every start of lact, measured ~0.4 s and ~200 MB before main on a CPU-only `lact --version`,
// which every batch job and viewer start would pay for a library only --device cuda uses.
#pragma once

#include <cublas_v2.h>

namespace lact::cuda {

// cublasGemmStridedBatchedEx with a cublasComputeType_t (the header also has an inline overload taking a
// cudaDataType compute type, which would make decltype ambiguous).
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                const void*, const void*, cudaDataType, int, long long int, const void*,
                                                cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                                long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

// The cuBLAS entry points the CUDA backend calls.
struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  GemmStridedBatchedEx gemm_strided_batched_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// Opens the library on first use (LD_LIBRARY_PATH, the system's paths, then the toolkit lact was built with);
// throws std::runtime_error naming the library and dlopen's reason when it cannot.
const CublasLibrary& cublas();

}  // namespace lact::cuda
