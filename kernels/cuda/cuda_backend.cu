// The CUDA backend: device_backend.h's ops over the CUDA runtime and cuBLAS. Tensors live in the
// stream-ordered pool (cudaMallocAsync: freed blocks are reused without a device synchronisation, which the
// model's many short-lived temporaries need), all work runs on one stream, GEMMs are cuBLAS strided-batched
// products at the chosen precision.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_backend.h"
#ifdef LACT_HAVE_CUDNN
#include "kernels/cuda/cudnn_sdpa.h"
#endif

namespace lact {

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why) *why = cudaGetErrorString(status);
    cudaGetLastError();  // clear it
    return 0;
  }
  if (count == 0 && why) *why = "the CUDA runtime reports no device";
  return count;
}

namespace {

std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Launches a kernel on the stream and checks the launch (cuda_ops.cuh calls it).
struct StreamLauncher {
  cudaStream_t stream = nullptr;
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) const {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
    kernel<<<grid, block, 0, stream>>>(static_cast<Params>(args)...);
    LACT_CUDA_CHECK(cudaGetLastError());
  }
};

cublasComputeType_t compute_type(Precision p) {
  switch (p) {
    case Precision::Tf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case Precision::Bf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case Precision::Fp32:
      break;
  }
  return CUBLAS_COMPUTE_32F;
}

// An instantiated CUDA graph.
class CudaGraph final : public Recording {
 public:
  explicit CudaGraph(cudaGraphExec_t exec) : exec(exec) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec); }
  cudaGraphExec_t exec;
};

class CudaRuntimeDevice {
 public:
  // LACT_ATTENTION is read first: a bad value is refused before any device work.
  explicit CudaRuntimeDevice(int device)
      : device_(device), attention_choice_(cuda::attention_choice_from_environment()) {
    LACT_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    LACT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    description_ = std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                   std::to_string(prop.totalGlobalMem >> 30) + " GiB";
    LACT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    LACT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool_, device_));
    uint64_t keep_everything = UINT64_MAX;  // the pool keeps freed memory for reuse instead of returning it
    LACT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything));
    LACT_CUBLAS_CHECK(cuda::cublas().create(&blas_));
    LACT_CUBLAS_CHECK(cuda::cublas().set_stream(blas_, stream_));
    LACT_CUBLAS_CHECK(cuda::cublas().set_math_mode(blas_, CUBLAS_DEFAULT_MATH));  // the compute type alone decides
    // A workspace of our own: cuBLAS then allocates nothing while a graph is being captured.
    LACT_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
    LACT_CUBLAS_CHECK(cuda::cublas().set_workspace(blas_, workspace_, kWorkspaceBytes));
    launcher_.stream = stream_;
  }
  ~CudaRuntimeDevice() {
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (blas_) cuda::cublas().destroy(blas_);
    cudaFree(workspace_);
    // The stream stays: tensors may outlive the backend and free on it (cudaFreeAsync).
  }
  CudaRuntimeDevice(const CudaRuntimeDevice&) = delete;
  CudaRuntimeDevice& operator=(const CudaRuntimeDevice&) = delete;

  StreamLauncher& launcher() { return launcher_; }
  std::string description() const { return description_; }
  void synchronize() { LACT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  int64_t available() const {
    size_t free = 0, total = 0;
    LACT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    // What the pool holds but no tensor uses is available too.
    const uint64_t reserved = pool_attribute(cudaMemPoolAttrReservedMemCurrent);
    const uint64_t used = pool_attribute(cudaMemPoolAttrUsedMemCurrent);
    return static_cast<int64_t>(free + (reserved - used));
  }
  int64_t used() const { return static_cast<int64_t>(pool_attribute(cudaMemPoolAttrUsedMemCurrent)); }
  int64_t peak() const { return static_cast<int64_t>(pool_attribute(cudaMemPoolAttrUsedMemHigh)); }
  void reset_peak() {
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    uint64_t zero = 0;  // the high-water mark restarts from the current use
    LACT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
  }

  std::shared_ptr<float> allocate(int64_t bytes, const Shape& shape) {
    void* memory = nullptr;
    if (bytes > 0) {
      const cudaError_t status = cudaMallocAsync(&memory, static_cast<size_t>(bytes), stream_);
      if (status != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error("out of GPU memory: cannot allocate " + mib(bytes) + " for a tensor " +
                                 shape_string(shape) + " (" + mib(available()) + " available on " + description_ + ")");
      }
    }
    cudaStream_t stream = stream_;
    return std::shared_ptr<float>(static_cast<float*>(memory), [stream](float* p) {
      if (p) cudaFreeAsync(p, stream);
    });
  }
  void* scratch(size_t bytes) {
    void* p = nullptr;
    LACT_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_));
    return p;
  }
  void release(void* p) { LACT_CUDA_CHECK(cudaFreeAsync(p, stream_)); }

  // From pageable memory the copy is staged before the call returns, so `host` may be reused at once.
  void to_device(void* dst, const void* host, size_t bytes) {
    LACT_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
  }
  void to_host(void* host, const void* src, size_t bytes) {
    LACT_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, size_t bytes) {
    LACT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows) {
    LACT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyDeviceToDevice, stream_));
  }

  // bf16 operands (Backend::linear_bf16) run cuBLAS's native bf16 kernels: fp32 compute, no operand conversion.
  void gemm(const cuda::ColumnMajorGemm& g, float alpha, float beta, Precision precision) {
    const auto type = [](DType t) { return t == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F; };
    const cublasComputeType_t compute = g.a_type == DType::BF16 ? CUBLAS_COMPUTE_32F : compute_type(precision);
    LACT_CUBLAS_CHECK(cuda::cublas().gemm_strided_batched_ex(
        blas_, g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), &alpha, g.a, type(g.a_type),
        static_cast<int>(g.lda), g.stride_a, g.b, type(g.b_type), static_cast<int>(g.ldb), g.stride_b, &beta, g.c,
        type(g.c_type), static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch), compute, CUBLAS_GEMM_DEFAULT));
  }

  // Profiling: events recorded on the stream, reused across profiles.
  size_t record_event() {
    if (used_events_ == events_.size()) {
      cudaEvent_t e;
      LACT_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    LACT_CUDA_CHECK(cudaEventRecord(events_[used_events_], stream_));
    return used_events_++;
  }
  double elapsed_ms(size_t from, size_t to) {
    float ms = 0;
    LACT_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[from], events_[to]));
    return ms;
  }
  void clear_events() { used_events_ = 0; }

  // CUDA graphs: the stream's work between begin and end is captured (allocations become graph memory
  // nodes); a capture that fails returns null and leaves the stream usable.
  bool begin_capture() {
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) == cudaSuccess) return true;
    cudaGetLastError();
    return false;
  }
  std::unique_ptr<Recording> end_capture() {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess || !graph) {
      cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      return nullptr;
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (status != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return std::make_unique<CudaGraph>(exec);
  }
  void replay(const Recording& recording) {
    LACT_CUDA_CHECK(cudaGraphLaunch(static_cast<const CudaGraph&>(recording).exec, stream_));
  }

  // cuDNN's fused attention, opened on the first bf16 attention (or `lact info --devices`), not before: a run at
  // fp32 never loads it.
  cuda::AttentionLibrary* attention_library() {
    if (attention_opened_) return attention_.get();
    attention_opened_ = true;
    if (attention_choice_ == cuda::AttentionChoice::Own || attention_choice_ == cuda::AttentionChoice::Wmma) {
      attention_unavailable_ =
          attention_choice_ == cuda::AttentionChoice::Own ? cuda::kAttentionChosenOwn : cuda::kAttentionChosenWmma;
      return nullptr;
    }
#ifdef LACT_HAVE_CUDNN
    try {
      attention_ = cuda::open_cudnn_sdpa(stream_);
    } catch (const std::exception& e) {
      attention_unavailable_ = e.what();
    }
#else
    attention_unavailable_ = "this lact was built without cuDNN's headers (cudnn_graph.h)";
#endif
    return attention_.get();
  }
  std::string attention_unavailable() const { return attention_unavailable_; }

 private:
  uint64_t pool_attribute(cudaMemPoolAttr attribute) const {
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // frees are stream-ordered
    uint64_t value = 0;
    LACT_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, attribute, &value));
    return value;
  }

  int device_;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  StreamLauncher launcher_;
  std::vector<cudaEvent_t> events_;
  size_t used_events_ = 0;
  static constexpr size_t kWorkspaceBytes = 32 << 20;
  void* workspace_ = nullptr;
  cuda::AttentionChoice attention_choice_;
  bool attention_opened_ = false;
  std::unique_ptr<cuda::AttentionLibrary> attention_;
  std::string attention_unavailable_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, Precision precision) {
  return std::make_unique<cuda::DeviceBackend<CudaRuntimeDevice>>("cuda", precision, device);
}

}  // namespace lact
