// Runs the CUDA kernels of kernels/cuda/ on the CPU, so their indexing, reductions and tiling are tested in
// CI where no GPU exists. The kernel headers are compiled as plain C++ with LACT_CUDA_EMULATION defined:
// every thread of a block is a std::thread (threadIdx is thread-local), __syncthreads() is a barrier of the
// block, warp shuffles exchange values through a per-warp buffer and barrier, and __shared__ arrays become
// function statics (one block runs at a time, so one copy is enough).
// What this cannot show: timing, memory coalescing, races that only a real scheduler would expose, and
// anything outside the kernels (cuBLAS, streams, allocation); the GPU tests cover those when a GPU is lent.
#pragma once

#include <math.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#define __global__ static  // internal linkage: the real kernels of the same names live in the CUDA backend
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace cuda_emulation {

class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
};

struct LaunchState {
  dim3 grid, block;
  std::unique_ptr<Barrier> block_barrier;
  std::vector<std::unique_ptr<Barrier>> warp_barriers;
  std::vector<double> shuffle_slots;  // one per thread of the block
};

inline LaunchState* current = nullptr;
inline thread_local dim3 thread_index;
inline thread_local dim3 block_index;
inline thread_local int linear_thread = 0;

}  // namespace cuda_emulation

#define threadIdx (cuda_emulation::thread_index)
#define blockIdx (cuda_emulation::block_index)
#define blockDim (cuda_emulation::current->block)
#define gridDim (cuda_emulation::current->grid)

inline void __syncthreads() { cuda_emulation::current->block_barrier->wait(); }

// Every lane of the warp must call it (full mask), as on the GPU.
template <typename T>
T __shfl_xor_sync(unsigned /*mask*/, T value, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(double), "shuffle of a type wider than 8 bytes");
  auto& s = *cuda_emulation::current;
  const int t = cuda_emulation::linear_thread, warp = t / 32, lane = t % 32;
  std::memcpy(&s.shuffle_slots[t], &value, sizeof(T));
  s.warp_barriers[warp]->wait();
  T result;
  std::memcpy(&result, &s.shuffle_slots[warp * 32 + (lane ^ lane_mask)], sizeof(T));
  s.warp_barriers[warp]->wait();
  return result;
}

inline void __syncwarp(unsigned /*mask*/ = 0xffffffffu) {
  auto& s = *cuda_emulation::current;
  s.warp_barriers[cuda_emulation::linear_thread / 32]->wait();
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// bfloat16 with the device's conversions: float -> bf16 rounds to nearest even.
struct __nv_bfloat16 {
  uint16_t bits = 0;
};
inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {0x7fc0};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<uint16_t>(u >> 16)};
}
inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t u = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Warp matrix operations (mma.h). On the GPU a fragment is spread over the 32 lanes in an unspecified
// layout; here every lane holds the whole tile (row-major), which computes the same result as long as the
// kernel touches fragments only through these calls, as it must on the GPU anyway. Stores are done by lane
// 0 alone, so a kernel that reads them from other lanes without __syncwarp() reads stale data here too.
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K>
struct fragment_shape;
template <int M, int N, int K>
struct fragment_shape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct fragment_shape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct fragment_shape<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int rows = fragment_shape<Use, M, N, K>::rows, cols = fragment_shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];
};

inline float element_value(float v) { return v; }
inline float element_value(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  constexpr bool row = std::is_same<Layout, row_major>::value;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c) f.x[r * F::cols + c] = row ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K>
void load_matrix_sync(fragment<accumulator, M, N, K, float>& f, const float* p, unsigned ldm, layout_t layout) {
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) f.x[r * N + c] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
  if (cuda_emulation::linear_thread % 32 != 0) return;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[r * N + c];
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, T value) {
  for (T& v : f.x) v = value;
}

// d = a b + c, products of the (bf16) inputs exact in float, accumulated in float.
template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b, const fragment<accumulator, M, N, K, float>& c) {
  float result[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = c.x[i * N + j];
      for (int p = 0; p < K; ++p) sum += element_value(a.x[i * K + p]) * element_value(b.x[p * N + j]);
      result[i * N + j] = sum;
    }
  for (int i = 0; i < M * N; ++i) d.x[i] = result[i];
}

}  // namespace nvcuda::wmma
// expf, erff, log1pf, sqrtf, fmaxf: the C library's, as on the device.

namespace cuda_emulation {

// Threads that stay between launches (creating 256 threads per launch made the emulated model tests spend
// most of their time in the kernel). run(n, f) calls f(0) ... f(n - 1) on n of them at once and returns when
// all have finished.
class WorkerPool {
 public:
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }
  void run(int threads, std::function<void(int)> job) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (static_cast<int>(workers_.size()) < threads) {
      const int id = static_cast<int>(workers_.size());
      workers_.emplace_back([this, id] { work(id); });
    }
    job_ = std::move(job);
    active_ = remaining_ = threads;
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [&] { return remaining_ == 0; });
  }

 private:
  void work(int id) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (id >= active_) continue;
      lock.unlock();
      job_(id);
      lock.lock();
      if (--remaining_ == 0) done_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::function<void(int)> job_;
  uint64_t generation_ = 0;
  int active_ = 0, remaining_ = 0;
  bool stop_ = false;
};

inline WorkerPool& worker_pool() {
  static WorkerPool pool;
  return pool;
}

// Launches kernel<<<grid, block>>>(args...) on the CPU: block after block, every thread of a block at once.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  const int threads = static_cast<int>(block.x * block.y * block.z);
  if (threads <= 0 || threads > 1024) throw std::invalid_argument("emulated launch: bad block size");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  if (threads % 32 && threads > 32) throw std::invalid_argument("emulated launch: block not a whole number of warps");
  static std::mutex one_launch_at_a_time;
  std::lock_guard<std::mutex> guard(one_launch_at_a_time);
  LaunchState state;
  state.grid = grid;
  state.block = block;
  state.block_barrier = std::make_unique<Barrier>(threads);
  for (int w = 0; w * 32 < threads; ++w) state.warp_barriers.push_back(std::make_unique<Barrier>(std::min(32, threads - w * 32)));
  state.shuffle_slots.assign(static_cast<size_t>((threads + 31) / 32 * 32), 0.0);
  current = &state;
  worker_pool().run(threads, [&](int t) {
    linear_thread = t;
    thread_index = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          block_index = dim3(x, y, z);
          kernel(static_cast<Params>(args)...);
          state.block_barrier->wait();  // the next block starts when this one has finished
        }
  });
  current = nullptr;
}

// The emulated counterpart of the CUDA backend's launcher (see kernels/cuda/cuda_ops.cuh).
struct Launcher {
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) const {
    launch(kernel, grid, block, args...);
  }
};

}  // namespace cuda_emulation
