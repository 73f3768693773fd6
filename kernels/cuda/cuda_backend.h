// The CUDA backend (kernels/cuda/cuda_backend.cu): cuBLAS for the products, our kernels for the rest.
// This header is plain C++ (no CUDA types), for code built without nvcc.
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.h"

namespace lact {

// Devices the CUDA runtime reports; 0 on any error (no driver, no device, an old driver), with the
// runtime's message in `why`.
int cuda_device_count(std::string* why = nullptr);

std::unique_ptr<Backend> make_cuda_backend(int device, Precision precision);

}  // namespace lact
