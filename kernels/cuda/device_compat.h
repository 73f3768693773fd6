// What the kernel headers of kernels/cuda/ need from CUDA: the real thing under nvcc, or the CPU emulation
// (tests/common/cuda_emulator.h) when the tests compile them as plain C++ with LACT_CUDA_EMULATION.
#pragma once

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
// A block's shared array: LACT_SHARED(__align__(16) float, tile, [64][68]) declares
// `__shared__ __align__(16) float tile[64][68]`. The emulator's version also fills the array with NaN bytes at each
// block's start, as a GPU gives a block whatever an earlier one left: kernels declare shared memory only this way.
#define LACT_SHARED(type, name, ...) __shared__ type name __VA_ARGS__
#elif defined(LACT_CUDA_EMULATION)
#include "tests/common/cuda_emulator.h"
#else
#error "kernels/cuda/*.cuh compile with nvcc, or with LACT_CUDA_EMULATION for the CPU tests"
#endif

#include <cstdint>

namespace lact::cuda {

// An element of either storage type (kernels/tensor.h's DType) read as float and a float stored as one (bf16
// rounded to nearest even): the kernels that take bf16 activations are templated on the element type through these.
__device__ __forceinline__ float load_float(const float* p) { return *p; }
__device__ __forceinline__ float load_float(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_float(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_float(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }

}  // namespace lact::cuda
