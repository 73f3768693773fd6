// cuDNN's fused scaled-dot-product attention (one CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, cuDNN 9.13 and later,
// through the plain C backend API of cudnn_graph.h) as the CUDA backend's AttentionLibrary: an operation graph and
// an execution plan built once per shape (heuristics' first engine config that finalizes) and cached, run with a
// variant pack on the backend's stream. Plain C++: no kernels of ours in it.
#pragma once

#include <memory>

#include "kernels/cuda/attention_library.h"

namespace lact::cuda {

struct CudnnLibrary;
struct SdpaGraphPlan;

// The SDPA forward operation over the layout's Q, K, V, O and scale descriptors, built and finalized by `lib`: cuDNN
// checks each descriptor and the operands' agreement there, with no handle or device (the graph and the plan need
// both). Throws std::runtime_error naming what cuDNN refused. test_cudnn_plan runs it on the real library.
void check_sdpa_operation(const CudnnLibrary& lib, const SdpaGraphPlan& layout);

// Loads cuDNN (cudnn_library.h) and makes a handle on `stream` (a cudaStream_t) of the current device; throws
// std::runtime_error with one line saying why not.
std::unique_ptr<AttentionLibrary> open_cudnn_sdpa(void* stream);

}  // namespace lact::cuda
