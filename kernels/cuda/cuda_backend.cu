// The CUDA backend: tensors in device memory from the stream-ordered pool (cudaMallocAsync: freed blocks are
// reused without a device synchronisation, which the model's many short-lived temporaries need), every op
// on one stream, cuBLAS strided-batched GEMMs at the chosen precision, our kernels (cuda_ops.cuh) for the
// rest. One mutex serialises the calls, so the viewer's encode and render threads may share a backend.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/gemm_plan.h"

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

void require_same_size(const Tensor& a, const Tensor& b, const char* op) {
  if (a.numel() != b.numel())
    throw std::invalid_argument(std::string(op) + ": sizes differ, " + shape_string(a.shape()) + " vs " +
                                shape_string(b.shape()));
}

std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Launches a kernel on the backend's stream and checks the launch (cuda_ops.cuh calls it).
struct StreamLauncher {
  cudaStream_t stream;
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) const {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
    kernel<<<grid, block, 0, stream>>>(static_cast<Params>(args)...);
    LACT_CUDA_CHECK(cudaGetLastError());
  }
};

cublasComputeType_t compute_type(Precision p) {
  switch (p) {
    case Precision::Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case Precision::Bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case Precision::Fp32: break;
  }
  return CUBLAS_COMPUTE_32F;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, Precision precision) : device_(device), precision_(precision) {
    LACT_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    LACT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    description_ = std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                   std::to_string(prop.totalGlobalMem >> 30) + " GiB, " + precision_name(precision_) + " products";
    LACT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    LACT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool_, device_));
    uint64_t keep_everything = UINT64_MAX;  // the pool keeps freed memory for reuse instead of returning it
    LACT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep_everything));
    LACT_CUBLAS_CHECK(cublasCreate(&blas_));
    LACT_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    LACT_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));  // fp32 means fp32; the compute type decides
    launch_.stream = stream_;
  }

  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    cublasDestroy(blas_);
    // The stream is not destroyed: tensors may outlive this object and free on it (cudaFreeAsync).
  }

  std::string name() const override { return "cuda"; }
  void set_threads(int) override {}
  Precision precision() const override { return precision_; }
  std::string device_description() const override { return description_; }
  void synchronize() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  int64_t available_memory() const override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    size_t free = 0, total = 0;
    LACT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    uint64_t reserved = 0, used = 0;  // what the pool holds but no tensor uses is available too
    LACT_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved));
    LACT_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used));
    return static_cast<int64_t>(free + (reserved - used));
  }

  int64_t allocated_memory() const override { return pool_attribute(cudaMemPoolAttrUsedMemCurrent); }
  int64_t peak_memory() const override { return pool_attribute(cudaMemPoolAttrUsedMemHigh); }
  void reset_peak_memory() override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    uint64_t zero = 0;  // resets the high-water mark to the current use
    LACT_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
  }

  // ---- memory
  Tensor empty(const Shape& shape) override {
    for (int64_t d : shape)
      if (d < 0) throw std::invalid_argument("negative dimension in tensor shape " + shape_string(shape));
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    const int64_t bytes = shape_numel(shape) * static_cast<int64_t>(sizeof(float));
    void* memory = nullptr;
    if (bytes > 0) {
      const cudaError_t status = cudaMallocAsync(&memory, static_cast<size_t>(bytes), stream_);
      if (status != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error("out of GPU memory: cannot allocate " + mib(bytes) + " for a tensor " +
                                 shape_string(shape) + " (" + mib(available_memory()) + " available on " +
                                 description_ + ")");
      }
    }
    cudaStream_t stream = stream_;
    std::shared_ptr<float> storage(static_cast<float*>(memory), [stream](float* p) {
      if (p) cudaFreeAsync(p, stream);
    });
    return Tensor(storage, storage.get(), shape, this);
  }

  void upload(Tensor& dst, const float* host) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (dst.numel() == 0) return;
    LACT_CUDA_CHECK(cudaMemcpyAsync(dst.data(), host, bytes(dst), cudaMemcpyHostToDevice, stream_));
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the caller may free `host` on return
  }

  void download(const Tensor& src, float* host) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (src.numel() == 0) return;
    LACT_CUDA_CHECK(cudaMemcpyAsync(host, src.data(), bytes(src), cudaMemcpyDeviceToHost, stream_));
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void copy(Tensor& dst, const Tensor& src) override {
    require_same_size(dst, src, "copy");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (dst.data() != src.data() && src.numel() > 0)
      LACT_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes(src), cudaMemcpyDeviceToDevice, stream_));
  }

  void fill(Tensor& t, float value) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::fill(launch_, t.data(), t.numel(), value);
  }

  void copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block,
                   int64_t count) override {
    if (block <= 0 || count <= 0) return;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    const size_t width = static_cast<size_t>(block) * sizeof(float);
    if (count == 1) {
      LACT_CUDA_CHECK(cudaMemcpyAsync(dst, src, width, cudaMemcpyDeviceToDevice, stream_));
      return;
    }
    if (dst_stride < block || src_stride < block)
      throw std::invalid_argument("copy_blocks: strides smaller than the block");
    LACT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_stride * sizeof(float), src, src_stride * sizeof(float), width,
                                      static_cast<size_t>(count), cudaMemcpyDeviceToDevice, stream_));
  }

  // ---- matrix products
  void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
            MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch) override {
    if (m == 0 || n == 0 || batch == 0) return;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (k == 0) {  // as CpuBackend defines it: C = beta * C, 0 for beta = 0
      cuda::scale_matrix(launch_, c, batch, m, n, ldc, stride_c, beta);
      return;
    }
    const cuda::ColumnMajorGemm g = cuda::plan_column_major_gemm(transpose_a, transpose_b, m, n, k, a, b, c, ldc,
                                                                 stride_c, batch);
    LACT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        blas_, g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), &alpha, g.a, CUDA_R_32F,
        static_cast<int>(g.lda), g.stride_a, g.b, CUDA_R_32F, static_cast<int>(g.ldb), g.stride_b, &beta, g.c,
        CUDA_R_32F, static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch), compute_type(precision_),
        CUBLAS_GEMM_DEFAULT));
  }

  // ---- elementwise and row ops
  void add(Tensor& y, const Tensor& x) override {
    require_same_size(y, x, "add");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::add(launch_, y.data(), x.data(), y.numel());
  }
  void axpby(Tensor& y, float a, const Tensor& x, float b) override {
    require_same_size(y, x, "axpby");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::axpby(launch_, y.data(), a, x.data(), b, y.numel());
  }
  void add_scaled_identity(Tensor& y, float a) override {
    if (y.rank() != 3 || y.dim(1) != y.dim(2))
      throw std::invalid_argument("add_scaled_identity: not square " + shape_string(y.shape()));
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::add_scaled_identity(launch_, y.data(), y.dim(0), y.dim(1), a);
  }
  void silu(Tensor& x) override { activation<cuda::Activation::Silu>(x, 0.0f); }
  void gelu(Tensor& x) override { activation<cuda::Activation::Gelu>(x, 0.0f); }
  void sigmoid(Tensor& x) override { activation<cuda::Activation::Sigmoid>(x, 0.0f); }
  void softplus(Tensor& x, float shift) override { activation<cuda::Activation::Softplus>(x, shift); }
  void add_bias(Tensor& x, const Tensor& bias) override {
    const int64_t cols = bias.numel();
    if (cols == 0 || x.numel() % cols) throw std::invalid_argument("add_bias: bias does not divide the tensor");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::add_bias(launch_, x.data(), bias.data(), x.numel(), cols);
  }
  void layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) override {
    require_same_size(y, x, "layer_norm");
    const int64_t cols = weight.numel();
    if (cols == 0 || x.numel() % cols) throw std::invalid_argument("layer_norm: weight does not divide the tensor");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::layer_norm(launch_, x.data(), weight.data(), y.data(), x.numel() / cols, cols, eps);
  }
  void rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y) override {
    require_same_size(y, x, "rms_norm");
    if (group <= 0 || weight.numel() != group || x.numel() % group)
      throw std::invalid_argument("rms_norm: weight " + shape_string(weight.shape()) + " for groups of " +
                                  std::to_string(group));
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::rms_norm(launch_, x.data(), weight.data(), y.data(), x.numel() / group, group, eps);
  }
  void l2_normalize(Tensor& x, int64_t group, float eps) override {
    if (group <= 0 || x.numel() % group) throw std::invalid_argument("l2_normalize: group does not divide the tensor");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::l2_normalize(launch_, x.data(), x.numel() / group, group, eps);
  }
  void scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride) override {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::scale_rows(launch_, x.data(), scale, x.dim(0), x.dim(1), x.dim(2), scale_batch_stride, scale_row_stride);
  }

  // ---- layout
  void split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, Tensor& dst) override {
    const int64_t views = src.dim(0), tokens = src.dim(1), width = src.dim(2);
    if (column_offset + heads * head_dim > width || dst.numel() != views * heads * tokens * head_dim)
      throw std::invalid_argument("split_heads: " + shape_string(src.shape()) + " -> " + shape_string(dst.shape()));
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::split_heads(launch_, src.data(), dst.data(), views, tokens, width, column_offset, heads, head_dim);
  }
  void merge_heads(const Tensor& src, Tensor& dst) override {
    require_same_size(dst, src, "merge_heads");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::merge_heads(launch_, src.data(), dst.data(), src.dim(0), src.dim(1), src.dim(2), src.dim(3));
  }

  // ---- attention
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) override {
    const int64_t batch = q.dim(0), queries = q.dim(1), dim = q.dim(2), keys = k.dim(1);
    if (k.dim(0) != batch || v.dim(0) != batch || k.dim(2) != dim || v.dim(1) != keys || v.dim(2) != dim ||
        out.dim(0) != batch || out.dim(1) != queries || out.dim(2) != dim)
      throw std::invalid_argument("attention: q " + shape_string(q.shape()) + ", k " + shape_string(k.shape()) +
                                  ", v " + shape_string(v.shape()) + ", out " + shape_string(out.shape()) +
                                  " (the cuda kernel needs value dim = query dim)");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::attention(launch_, q.data(), k.data(), v.data(), out.data(), batch, queries, keys, static_cast<int>(dim),
                    scale, precision_ == Precision::Bf16);
  }

  // ---- tokens
  void ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width, int patch,
                  Tensor& tokens) override {
    const int64_t views = static_cast<int64_t>(poses.size());
    if (patch <= 0 || height % patch || width % patch ||
        tokens.numel() != views * static_cast<int64_t>(height) * width * 12 ||
        (images && images->numel() != views * static_cast<int64_t>(height) * width * 3))
      throw std::invalid_argument("ray_tokens: " + std::to_string(views) + " views of " + std::to_string(height) +
                                  "x" + std::to_string(width) + " for tokens " + shape_string(tokens.shape()));
    if (views == 0) return;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    void* device = nullptr;
    const size_t bytes = poses.size() * sizeof(RayPose);
    LACT_CUDA_CHECK(cudaMallocAsync(&device, bytes, stream_));
    LACT_CUDA_CHECK(cudaMemcpyAsync(device, poses.data(), bytes, cudaMemcpyHostToDevice, stream_));  // staged
    cuda::ray_tokens(launch_, static_cast<const RayPose*>(device), images ? images->data() : nullptr, tokens.data(),
                     views, height, width, patch);
    LACT_CUDA_CHECK(cudaFreeAsync(device, stream_));
  }

  // ---- SwiGLU pieces
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
    require_same_size(gate, up, "swiglu");
    require_same_size(gate, out, "swiglu");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::swiglu(launch_, gate.data(), up.data(), out.data(), gate.numel());
  }
  void swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden) override {
    require_same_size(gate, up, "swiglu_backward");
    require_same_size(gate, dhidden, "swiglu_backward");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::swiglu_backward(launch_, gate.data(), up.data(), dhidden.data(), gate.numel());
  }

  // ---- reductions
  std::vector<double> batched_dot(const Tensor& a, const Tensor& b) override {
    require_same_size(a, b, "batched_dot");
    const int64_t batch = a.dim(0), per = batch ? a.numel() / batch : 0;
    std::vector<double> result(static_cast<size_t>(batch), 0.0);
    if (batch == 0 || per == 0) return result;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    const int64_t parts = cuda::batched_dot_parts(per);
    std::vector<double> partial(static_cast<size_t>(batch * parts));
    void* device = nullptr;
    LACT_CUDA_CHECK(cudaMallocAsync(&device, partial.size() * sizeof(double), stream_));
    cuda::batched_dot(launch_, a.data(), b.data(), batch, per, static_cast<double*>(device));
    LACT_CUDA_CHECK(cudaMemcpyAsync(partial.data(), device, partial.size() * sizeof(double), cudaMemcpyDeviceToHost,
                                    stream_));
    LACT_CUDA_CHECK(cudaFreeAsync(device, stream_));
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t p = 0; p < parts; ++p) result[i] += partial[i * parts + p];
    return result;
  }
  void column_norms(const Tensor& w, Tensor& norms) override {
    if (norms.numel() != w.dim(0) * w.dim(2)) throw std::invalid_argument("column_norms: output size");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::column_norms(launch_, w.data(), norms.data(), w.dim(0), w.dim(1), w.dim(2));
  }
  void restore_column_norms(Tensor& w, const Tensor& target, float eps) override {
    if (target.numel() != w.dim(0) * w.dim(2)) throw std::invalid_argument("restore_column_norms: target size");
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::restore_column_norms(launch_, w.data(), target.data(), w.dim(0), w.dim(1), w.dim(2), eps);
  }
  void scale_batched(Tensor& x, const std::vector<float>& scale) override {
    const int64_t batch = x.dim(0);
    if (static_cast<int64_t>(scale.size()) != batch)
      throw std::invalid_argument("scale_batched: one scale per batch");
    if (x.numel() == 0) return;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    void* device = nullptr;
    LACT_CUDA_CHECK(cudaMallocAsync(&device, scale.size() * sizeof(float), stream_));
    // From pageable memory the copy is staged before the call returns, so `scale` may go away after it.
    LACT_CUDA_CHECK(
        cudaMemcpyAsync(device, scale.data(), scale.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    cuda::scale_batched(launch_, x.data(), static_cast<const float*>(device), batch, x.numel() / batch);
    LACT_CUDA_CHECK(cudaFreeAsync(device, stream_));
  }

 private:
  int64_t pool_attribute(cudaMemPoolAttr attribute) const {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    LACT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // frees are stream-ordered
    uint64_t value = 0;
    LACT_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, attribute, &value));
    return static_cast<int64_t>(value);
  }

  static size_t bytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * sizeof(float); }

  template <cuda::Activation A>
  void activation(Tensor& x, float shift) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    cuda::activation<A>(launch_, x.data(), x.numel(), shift);
  }

  int device_;
  Precision precision_;
  std::string description_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  StreamLauncher launch_{nullptr};
  mutable std::recursive_mutex mutex_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, Precision precision) {
  return std::make_unique<CudaBackend>(device, precision);
}

}  // namespace lact
