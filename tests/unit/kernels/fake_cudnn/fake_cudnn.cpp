// A stand-in for libcudnn.so.9 in tests/unit/kernels/test_cudnn_plan.cpp: it reports the version it was built with
// (FAKE_CUDNN_VERSION) and has no other entry point, so the loader's refusals (too old, incomplete) are tested
// without cuDNN or a GPU.
#include <cstddef>

extern "C" size_t cudnnGetVersion(void) { return FAKE_CUDNN_VERSION; }
