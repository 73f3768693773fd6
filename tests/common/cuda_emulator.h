// Runs the CUDA kernels of kernels/cuda/ on the CPU, so their indexing, reductions and tiling are tested in
// CI where no GPU exists. The kernel headers are compiled as plain C++ with LACT_CUDA_EMULATION defined:
// every thread of a block is a fiber (tests/common/emulator_fibers.h) on the calling thread, run round-robin until it
// finishes or waits; __syncthreads() is a barrier of the block's fibers, warp shuffles exchange values through a
// per-warp buffer and barrier, and shared memory is function statics filled with 0xff bytes at each block's start (see
// "Shared memory" below). A block whose fibers all wait on barriers that cannot complete (divergent __syncthreads, a
// missing lane) is reported as a deadlock instead of hanging.
// What this cannot show: timing, memory coalescing, races that only a real scheduler would expose, and
// anything outside the kernels (cuBLAS, streams, allocation); the GPU tests cover those when a GPU is lent.
#pragma once

#include <math.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/common/emulator_fibers.h"

#define __global__ static  // internal linkage: the real kernels of the same names live in the CUDA backend
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Shared memory: kernels declare it with LACT_SHARED(type, name, dims) (kernels/cuda/device_compat.h; a plain
// __shared__ does not compile here), a static array (one block runs at a time, so one copy is enough) that the first
// thread of each block to pass the declaration fills with 0xff bytes (NaN as float, bf16 and double; -1 as an integer):
// a GPU block starts with whatever an earlier block left there, so a kernel that reads an element its block did not
// write gets garbage on the GPU and NaN here, not a stale value that happens to be right. No thread can touch the
// array before passing its declaration, so the fill always comes first. (No kernel uses dynamic shared memory,
// extern __shared__, and the emulated launch takes no size for it.)
#define LACT_SHARED(type, name, ...) \
  static type name __VA_ARGS__;      \
  ::cuda_emulation::enter_shared(name, sizeof(name))
#define __shared__ static_assert(false, "declare shared memory with LACT_SHARED (kernels/cuda/device_compat.h)");
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

// One thread's cp.async copies: the groups it committed (oldest first) and the copies not yet committed. A copy
// lands only when a wait retires its group, so a kernel that reads a tile before waiting reads stale data here.
struct AsyncCopy {
  void* dst;
  const void* src;  // null: zero-fill
};
struct AsyncCopies {
  std::vector<std::vector<AsyncCopy>> groups;
  std::vector<AsyncCopy> open;
};

struct Fiber {
  FiberContext context;
  bool done = false;
};

struct LaunchState {
  dim3 grid, block;
  Barrier block_barrier;
  std::vector<Barrier> warp_barriers;
  std::vector<double> shuffle_slots;                // one per thread of the block
  std::vector<std::array<uint32_t, 10>> mma_slots;  // one per thread: an mma.sync's a, b and c registers
  std::vector<const void*> ldmatrix_rows;           // one per thread: the row address it gives an ldmatrix
  std::vector<AsyncCopies> async_copies;            // one per thread
  std::vector<Fiber> fibers;
  FiberContext scheduler;
  std::function<void()> body;              // runs the kernel for the current thread
  uint64_t progress = 0;                   // barrier arrivals and finished fibers, to detect a deadlock
  std::vector<const void*> shared_arrays;  // the LACT_SHARED arrays filled in this block
};

inline LaunchState* current = nullptr;
inline dim3 thread_index;
inline dim3 block_index;
inline int linear_thread = 0;

// Called by every thread at each LACT_SHARED declaration: the array filled with 0xff bytes the first time in a block.
inline void enter_shared(void* array, size_t bytes) {
  auto& filled = current->shared_arrays;
  if (std::find(filled.begin(), filled.end(), array) != filled.end()) return;
  std::memset(array, 0xff, bytes);
  filled.push_back(array);
}

// Back to the scheduler; this fiber resumes in the next round.
inline void yield() { switch_fiber(current->fibers[linear_thread].context, current->scheduler); }

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

// The CUDA vector type the kernels read shared memory through.
struct alignas(8) float2 {
  float x, y;
};

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
// expf, exp2f, erff, log1pf, sqrtf, fmaxf: the C library's, as on the device.

// The PTX primitives of kernels/cuda/mma_primitives.cuh (see there for the fragment layouts).
namespace cuda_emulation {

inline uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<uint32_t>(__float2bfloat16(lo).bits) | static_cast<uint32_t>(__float2bfloat16(hi).bits) << 16;
}
// Half `half` (0 low, 1 high) of a packed register as a float.
inline float bf16_half(uint32_t reg, int half) { return __bfloat162float({static_cast<uint16_t>(reg >> (16 * half))}); }

// Where element (row, col) of each m16n8k16 operand lives: lane, register and half (the PTX ISA's tables).
inline void a_location(int row, int col, int& lane, int& reg, int& half) {
  lane = (row % 8) * 4 + (col % 8) / 2, reg = row / 8 + 2 * (col / 8), half = col % 2;
}
inline void b_location(int row, int col, int& lane, int& reg, int& half) {
  lane = col * 4 + (row % 8) / 2, reg = row / 8, half = row % 2;
}
inline void c_location(int row, int col, int& lane, int& reg) {
  lane = (row % 8) * 4 + col / 2, reg = 2 * (row / 8) + col % 2;
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 with acc as both c and d: a warp-wide operation (all 32
// lanes, as on the GPU); products exact in float, summed in float over k in order, then added to c.
inline void mma_bf16_16x8x16(float (&acc)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  auto& s = *current;
  const int t = linear_thread, warp = t / 32, lane = t % 32;
  if (s.warp_barriers[warp].count != 32) throw std::logic_error("emulated mma.sync in a partial warp");
  auto& mine = s.mma_slots[t];
  for (int i = 0; i < 4; ++i) mine[i] = a[i];
  for (int i = 0; i < 2; ++i) mine[4 + i] = b[i];
  for (int i = 0; i < 4; ++i) std::memcpy(&mine[6 + i], &acc[i], 4);
  wait(s.warp_barriers[warp]);
  const auto* slots = &s.mma_slots[warp * 32];
  float result[4];
  for (int r = 0; r < 4; ++r) {
    const int row = lane / 4 + 8 * (r / 2), col = (lane % 4) * 2 + r % 2;
    float sum = 0.0f;
    for (int k = 0; k < 16; ++k) {
      int la, ra, ha, lb, rb, hb;
      a_location(row, k, la, ra, ha);
      b_location(k, col, lb, rb, hb);
      sum += bf16_half(slots[la][ra], ha) * bf16_half(slots[lb][4 + rb], hb);
    }
    int lc, rc;
    c_location(row, col, lc, rc);
    float c;
    std::memcpy(&c, &slots[lc][6 + rc], 4);
    result[r] = c + sum;
  }
  wait(s.warp_barriers[warp]);  // every lane has read the slots before any overwrites them
  for (int r = 0; r < 4; ++r) acc[r] = result[r];
}

// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16, a warp-wide operation (all 32 lanes, as on the GPU): lane i gives
// the address of row i % 8 of matrix i / 8 (eight 16-bit elements, 16-byte aligned); every lane receives in r[m], for
// matrix m, its elements (row lane / 4, columns 2 (lane % 4) + {0,1}), or with trans those of the transposed matrix
// (rows 2 (lane % 4) + {0,1}, column lane / 4), the first of the two in the low half.
inline void ldmatrix_x4_emulated(uint32_t (&r)[4], const void* row, bool trans) {
  auto& s = *current;
  const int t = linear_thread, warp = t / 32, lane = t % 32;
  if (s.warp_barriers[warp].count != 32) throw std::logic_error("emulated ldmatrix in a partial warp");
  if (reinterpret_cast<uintptr_t>(row) % 16) throw std::logic_error("emulated ldmatrix: a row not 16-byte aligned");
  s.ldmatrix_rows[t] = row;
  wait(s.warp_barriers[warp]);
  const auto* rows = &s.ldmatrix_rows[warp * 32];
  const auto element = [&](int m, int i, int j) {  // element (i, j) of matrix m
    uint16_t bits;
    std::memcpy(&bits, static_cast<const char*>(rows[8 * m + i]) + 2 * j, 2);
    return static_cast<uint32_t>(bits);
  };
  uint32_t result[4];
  const int group = lane / 4, pair = 2 * (lane % 4);
  for (int m = 0; m < 4; ++m)
    result[m] = trans ? element(m, pair, group) | element(m, pair + 1, group) << 16
                      : element(m, group, pair) | element(m, group, pair + 1) << 16;
  wait(s.warp_barriers[warp]);  // every lane has read the addresses before any gives its next
  for (int m = 0; m < 4; ++m) r[m] = result[m];
}
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) { ldmatrix_x4_emulated(r, row, false); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) { ldmatrix_x4_emulated(r, row, true); }

// When the emulated copies land: at the wait that retires their group (the latest the GPU may land them: a read
// before the wait sees stale data), or at once when issued (the earliest: a refill of a buffer that other warps
// still read, without a barrier between, overwrites what they read). The tests run a kernel in both.
enum class CopyLanding { AtWait, AtIssue };
inline CopyLanding copy_landing = CopyLanding::AtWait;

inline void cp_async_16(void* dst, const void* src, bool valid) {
  if (reinterpret_cast<uintptr_t>(dst) % 16 || (valid && reinterpret_cast<uintptr_t>(src) % 16))
    throw std::logic_error("emulated cp.async: an address not 16-byte aligned");
  if (copy_landing == CopyLanding::AtIssue) {
    if (valid)
      std::memcpy(dst, src, 16);
    else
      std::memset(dst, 0, 16);
    return;
  }
  current->async_copies[linear_thread].open.push_back({dst, valid ? src : nullptr});
}
inline void cp_async_commit() {
  auto& c = current->async_copies[linear_thread];
  c.groups.push_back(std::move(c.open));
  c.open.clear();
}
template <int N>
void cp_async_wait() {
  auto& groups = current->async_copies[linear_thread].groups;
  while (static_cast<int>(groups.size()) > N) {
    for (const AsyncCopy& copy : groups.front()) {
      if (copy.src)
        std::memcpy(copy.dst, copy.src, 16);
      else
        std::memset(copy.dst, 0, 16);
    }
    groups.erase(groups.begin());
  }
}

}  // namespace cuda_emulation

namespace cuda_emulation {

// Every fiber's entry: the kernel for the current thread, then back to the scheduler for good.
[[noreturn]] inline void fiber_main() {
  LaunchState& s = *current;
  s.body();
  s.fibers[linear_thread].done = true;
  ++s.progress;
  switch_fiber(s.fibers[linear_thread].context, s.scheduler);
  std::abort();  // a finished fiber is never resumed
}

inline void prepare_fiber(Fiber& f, std::vector<char>& stack) {
  f.done = false;
  start_fiber(f.context, stack, fiber_main);
}

// Stacks kept between launches: 128 KiB per thread (the bf16 attention's emulated fragments are a few KiB).
inline std::vector<std::vector<char>>& fiber_stacks() {
  static std::vector<std::vector<char>> stacks;
  return stacks;
}

// Whether warps run at different speeds (warp w every (w % 4 + 1)-th round of the scheduler): a warp then gets ahead
// of the others by many steps between barriers, as on the GPU, which shows a missing __syncthreads that lockstep
// round-robin hides (one warp refilling shared memory that another still reads).
inline bool skewed_warps = false;

// The schedule for a scope, restored at its end: adversarial = copies landing at issue with warps at different speeds
// (a stage refilled while another warp still reads it fails), else the copies landing at the wait (a read before its
// wait fails).
struct ScheduleScope {
  CopyLanding landing;
  bool skewed;
  explicit ScheduleScope(bool adversarial) : landing(copy_landing), skewed(skewed_warps) {
    copy_landing = adversarial ? CopyLanding::AtIssue : landing;
    skewed_warps = adversarial;
  }
  ~ScheduleScope() { copy_landing = landing, skewed_warps = skewed; }
};

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
  state.mma_slots.resize(static_cast<size_t>(threads));
  state.ldmatrix_rows.resize(static_cast<size_t>(threads));
  state.fibers.resize(static_cast<size_t>(threads));
  state.body = [&] { kernel(static_cast<Params>(args)...); };
  auto& stacks = fiber_stacks();
  while (static_cast<int>(stacks.size()) < threads) stacks.emplace_back(kStack);
  current = &state;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        block_index = dim3(x, y, z);
        state.shared_arrays.clear();  // a new block finds its shared memory poisoned
        for (int t = 0; t < threads; ++t) prepare_fiber(state.fibers[t], stacks[t]);
        state.async_copies.assign(static_cast<size_t>(threads), {});  // copies never waited for are dropped
        uint64_t before = state.progress;
        for (uint64_t round = 1, alive = 1; alive; ++round) {
          alive = 0;
          for (int t = 0; t < threads; ++t) {
            if (state.fibers[t].done) continue;
            alive = 1;
            if (skewed_warps && round % (t / 32 % 4 + 1)) continue;  // warp w runs every (w % 4 + 1)-th round
            linear_thread = t;
            thread_index = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
            switch_fiber(state.scheduler, state.fibers[t].context);
          }
          if (round % (skewed_warps ? 12 : 1)) continue;  // every warp has had a turn since the last check
          if (alive && state.progress == before) {
            current = nullptr;
            throw std::runtime_error("emulated launch: deadlock (threads wait on barriers that cannot complete)");
          }
          before = state.progress;
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
