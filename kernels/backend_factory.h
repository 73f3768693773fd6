// Making a backend by name: the factory the front ends call (`--device`), apart from the op interface so that
// kernels/backend.cpp includes no implementation. The CPU backend (kernels/cpu/) and the CUDA backend
// (kernels/cuda/, where the build has it) are the implementations it chooses between.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace lact {

// Which library runs the CPU backend's fp32 products. Auto: oneDNN where the build has it (as fast as OpenBLAS
// or faster on every shape measured; see kernels/cpu/dnnl_gemm.h), else OpenBLAS.
enum class CpuGemmLibrary { Auto, OpenBlas, OneDnn };
std::unique_ptr<Backend> make_cpu_backend(int threads, Precision precision = Precision::Fp32,
                                          CpuGemmLibrary fp32_library = CpuGemmLibrary::Auto);
// The backends this build has: "cpu" always, "cuda" when built with CUDA (whether or not a GPU is present).
std::vector<std::string> backend_names();
// Whether `name` can run here; if not, `why` says why (e.g. "no CUDA device: ...").
bool backend_available(const std::string& name, std::string* why = nullptr);
// "cpu" or "cuda"; throws std::invalid_argument for an unknown name, an unsupported precision, or no device.
std::unique_ptr<Backend> make_backend(const std::string& name, int threads, Precision precision = Precision::Fp32);

}  // namespace lact
