// Runs the CUDA kernels of kernels/cuda/ on the CPU, so their indexing, reductions and tiling are tested in
// CI where no GPU exists. The kernel headers are compiled as plain C++ with LACT_CUDA_EMULATION defined:
// every thread of a block is a fiber (ucontext) on the calling thread, run round-robin until it finishes or
// waits; __syncthreads() is a barrier of the block's fibers, warp shuffles exchange values through a
// per-warp buffer and barrier, and __shared__ arrays become function statics (one block runs at a time, so
// one copy is enough). A block whose fibers all wait on barriers that cannot complete (divergent
// __syncthreads, a missing lane) is reported as a deadlock instead of hanging.
// What this cannot show: timing, memory coalescing, races that only a real scheduler would expose, and
// anything outside the kernels (cuBLAS, streams, allocation); the GPU tests cover those when a GPU is lent.
#pragma once

#include <math.h>
#include <ucontext.h>

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

struct Barrier {
  int count = 0, arrived = 0;
  uint64_t generation = 0;
};

struct Fiber {
  ucontext_t context;
  bool done = false;
};

struct LaunchState {
  dim3 grid, block;
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  std::vector<double> shuffle_slots;  // one per thread of the block
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  std::function<void()> body;  // runs the kernel for the current thread
  uint64_t progress = 0;       // barrier arrivals and finished fibers, to detect a deadlock
};

inline LaunchState* current = nullptr;
inline dim3 thread_index;
inline dim3 block_index;
inline int linear_thread = 0;

// Back to the scheduler; this fiber resumes in the next round.
inline void yield() { swapcontext(&current->fibers[linear_thread].context, &current->scheduler); }

inline void wait(Barrier& b) {
  const uint64_t generation = b.generation;
  ++current->progress;
  if (++b.arrived == b.count) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation) yield();
}

}  // namespace cuda_emulation

#define threadIdx (cuda_emulation::thread_index)
#define blockIdx (cuda_emulation::block_index)
#define blockDim (cuda_emulation::current->block)
#define gridDim (cuda_emulation::current->grid)

inline void __syncthreads() { cuda_emulation::wait(cuda_emulation::current->block_barrier); }

// Every lane of the warp must call it (full mask), as on the GPU.
template <typename T>
T __shfl_xor_sync(unsigned /*mask*/, T value, int lane_mask) {
  static_assert(sizeof(T) <= sizeof(double), "shuffle of a type wider than 8 bytes");
  auto& s = *cuda_emulation::current;
  const int t = cuda_emulation::linear_thread, warp = t / 32, lane = t % 32;
  std::memcpy(&s.shuffle_slots[t], &value, sizeof(T));
  cuda_emulation::wait(s.warp_barriers[warp]);
  T result;
  std::memcpy(&result, &s.shuffle_slots[warp * 32 + (lane ^ lane_mask)], sizeof(T));
  cuda_emulation::wait(s.warp_barriers[warp]);
  return result;
}

inline void __syncwarp(unsigned /*mask*/ = 0xffffffffu) {
  cuda_emulation::wait(cuda_emulation::current->warp_barriers[cuda_emulation::linear_thread / 32]);
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

inline void fiber_main() {
  LaunchState& s = *current;
  s.body();
  s.fibers[linear_thread].done = true;
  ++s.progress;
}  // returns to the scheduler through uc_link

// A fresh context that starts in fiber_main (its own function: getcontext returns twice, like setjmp, and
// must not share a frame with the launch loop's variables).
[[gnu::noinline]] inline void prepare_fiber(Fiber& f, std::vector<char>& stack, ucontext_t* scheduler) {
  f.done = false;
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack.data();
  f.context.uc_stack.ss_size = stack.size();
  f.context.uc_link = scheduler;
  makecontext(&f.context, fiber_main, 0);
}

// Stacks kept between launches: 128 KiB per thread (the bf16 attention's emulated fragments are a few KiB).
inline std::vector<std::vector<char>>& fiber_stacks() {
  static std::vector<std::vector<char>> stacks;
  return stacks;
}

// Launches kernel<<<grid, block>>>(args...) on the CPU: block after block, the threads of a block as fibers.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  constexpr size_t kStack = 128 << 10;
  const int threads = static_cast<int>(block.x * block.y * block.z);
  if (threads <= 0 || threads > 1024) throw std::invalid_argument("emulated launch: bad block size");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  if (threads % 32 && threads > 32) throw std::invalid_argument("emulated launch: block not a whole number of warps");
  static std::mutex one_launch_at_a_time;
  std::lock_guard<std::mutex> guard(one_launch_at_a_time);
  LaunchState state;
  state.grid = grid;
  state.block = block;
  state.block_barrier.count = threads;
  for (int w = 0; w * 32 < threads; ++w) state.warp_barriers.push_back({std::min(32, threads - w * 32)});
  state.shuffle_slots.assign(static_cast<size_t>((threads + 31) / 32 * 32), 0.0);
  state.fibers.resize(static_cast<size_t>(threads));
  state.body = [&] { kernel(static_cast<Params>(args)...); };
  auto& stacks = fiber_stacks();
  while (static_cast<int>(stacks.size()) < threads) stacks.emplace_back(kStack);
  current = &state;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        block_index = dim3(x, y, z);
        for (int t = 0; t < threads; ++t) prepare_fiber(state.fibers[t], stacks[t], &state.scheduler);
        for (bool alive = true; alive;) {
          alive = false;
          const uint64_t before = state.progress;
          for (int t = 0; t < threads; ++t) {
            if (state.fibers[t].done) continue;
            linear_thread = t;
            thread_index = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
            swapcontext(&state.scheduler, &state.fibers[t].context);
            alive = alive || !state.fibers[t].done;
          }
          if (alive && state.progress == before) {
            current = nullptr;
            throw std::runtime_error("emulated launch: deadlock (threads wait on barriers that cannot complete)");
          }
        }
      }
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
