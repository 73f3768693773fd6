// cuDNN opened at run time (dlopen), as cuBLAS is (cublas_library.h): lact starts and runs without it, and only a
// bf16 attention on the CUDA backend pays for loading it. Found on the library path, in the toolkit lact was built
// with, or in PyTorch's wheel (site-packages/nvidia/cudnn/lib), which is where the GPU machines have it.
#pragma once

#include <cudnn_graph.h>

#include <string>
#include <vector>

namespace lact::cuda {

// The cuDNN entry points the SDPA graph needs (the backend API of cudnn_graph.h).
struct CudnnLibrary {
  size_t version = 0;  // cudnnGetVersion(), e.g. 91900
  std::string path;    // the file that was opened
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnDestroy) destroy = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnGetLastErrorString) last_error = nullptr;
  decltype(&cudnnBackendCreateDescriptor) create_descriptor = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) destroy_descriptor = nullptr;
  decltype(&cudnnBackendSetAttribute) set_attribute = nullptr;
  decltype(&cudnnBackendGetAttribute) get_attribute = nullptr;
  decltype(&cudnnBackendFinalize) finalize = nullptr;
  decltype(&cudnnBackendExecute) execute = nullptr;
};

// Where cuDNN is looked for, in order: LACT_CUDNN_LIBRARY (a path, when set), libcudnn.so.9 on the library path,
// the build's toolkit, then PyTorch's wheel in the usual site-packages folders.
std::vector<std::string> cudnn_candidates();

// Opens the first candidate that loads and checks it: throws std::runtime_error with one line saying why not
// (no candidate loads: the loader's reason for the first; a version without the fused SDPA; a missing entry point).
CudnnLibrary open_cudnn(const std::vector<std::string>& candidates);

// open_cudnn(cudnn_candidates()) once per process; the same answer (the library or the same error) every call.
const CudnnLibrary& cudnn();

}  // namespace lact::cuda
