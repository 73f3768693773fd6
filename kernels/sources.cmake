# kernels/' sources, in two lists that its CMakeLists.txt joins: the op interface (tensors, the checked ops,
# no backend: what the fuzz project, tests/fuzz, links for the safetensors reader) and the backends with their
# factory. CUDA's own files are added by CMakeLists.txt where the build has CUDA.
set(LACT_KERNELS_INTERFACE_SOURCES
  tensor.cpp
  backend.cpp
  backend_ops.cpp
  op_checks.cpp
  newton_schulz_flops.cpp
)
set(LACT_KERNELS_BACKEND_SOURCES
  backend_factory.cpp
  newton_schulz.cpp
  cpu/cpu_backend.cpp
  cpu/cpu_attention.cpp
  cpu/block_pool.cpp
  cpu/large_blocks.cpp
  cpu/op_profiler.cpp
  cpu/dnnl_gemm.cpp
  cpu/bf16_constants.cpp
  cpu/cpu_conv.cpp
  cuda/gemm_plan.cpp
  cuda/bf16_storage.cpp
  cuda/attention_library.cpp
  cuda/cudnn_sdpa_plan.cpp
)
