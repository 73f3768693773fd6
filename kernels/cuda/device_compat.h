// What the kernel headers of kernels/cuda/ need from CUDA: the real thing under nvcc, or the CPU emulation
// (tests/common/cuda_emulator.h) when the tests compile them as plain C++ with LACT_CUDA_EMULATION.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#elif defined(LACT_CUDA_EMULATION)
#include "tests/common/cuda_emulator.h"
#else
#error "kernels/cuda/*.cuh compile with nvcc, or with LACT_CUDA_EMULATION for the CPU tests"
#endif

#include <cstdint>
