// The warp-level primitives of the FlashAttention-2-class kernel (attention_fa2_kernel.cuh), as PTX under nvcc
// (sm_80 and later) and as their CPU emulation otherwise (tests/common/cuda_emulator.h defines the same functions with
// the same fragment layouts, tested against plain loops in test_cuda_emulated and test_cuda_fa2_bf16_storage):
//   mma_bf16_16x8x16(acc, a, b)   acc (16x8 fp32) += a (16x16 bf16, row) * b (16x8 bf16, col): mma.sync m16n8k16;
//                                 fragments per the PTX ISA (lane = 4 * group + quad): a[0] = A[group][2 quad +
//                                 {0,1}], a[1] = row group + 8, a[2] = columns + 8, a[3] = both + 8; b[0] =
//                                 B[2 quad + {0,1}][group], b[1] = rows + 8; acc[0..1] = C[group][2 quad + {0,1}],
//                                 acc[2..3] = row group + 8. Each 32-bit register holds two bf16, the lower column
//                                 (or row) in the low half.
//   ldmatrix_x4(r, row)           ldmatrix.sync.aligned.m8n8.x4.shared.b16, warp-wide: lane i gives the shared-memory
//                                 address of row i % 8 (eight 16-bit elements, 16-byte aligned) of 8x8 matrix i / 8;
//                                 r[m] = matrix m's elements (lane / 4, 2 (lane % 4) + {0,1}), the lower column in the
//                                 low half: for row-major K rows, the B fragment of S = Q K^T
//   ldmatrix_x4_trans(r, row)     the same with .trans: r[m] = matrix m's elements (2 (lane % 4) + {0,1}, lane / 4),
//                                 the lower row in the low half: for row-major V rows, the B fragment of O += P V
//   pack_bf16x2(lo, hi)           two floats rounded to bf16 (nearest even) in one register, lo in the low half
//   cp_async_16(dst, src, valid)  an asynchronous 16-byte copy global -> shared (zeros when !valid; src is not read)
//   cp_async_commit(), cp_async_wait<N>()   close the copies issued so far into a group; wait until at most N of
//                                 this thread's groups are still in flight (the data is then visible to this
//                                 thread; a __syncthreads makes it visible to the block)
#pragma once

#include "kernels/cuda/device_compat.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>

namespace lact::cuda {

__device__ __forceinline__ void mma_bf16_16x8x16(float (&acc)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo in the low half
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace lact::cuda
#else
namespace lact::cuda {
using cuda_emulation::cp_async_16;
using cuda_emulation::cp_async_commit;
using cuda_emulation::cp_async_wait;
using cuda_emulation::ldmatrix_x4;
using cuda_emulation::ldmatrix_x4_trans;
using cuda_emulation::mma_bf16_16x8x16;
using cuda_emulation::pack_bf16x2;
}  // namespace lact::cuda
#endif
