// The kernel emulator's fibers (tests/common/cuda_emulator.h): one per CUDA thread of a block, all on the calling
// thread, each switched to and from the emulator's scheduler.
//
// On x86-64 a switch pushes the callee-saved registers and the floating-point control words on the fiber's own stack
// and swaps the stack pointer, nothing more. glibc's swapcontext also saves and restores the signal mask, a system
// call on every switch, and the emulated tests switch a few times per thread per barrier: that call was half of
// their time. Under the sanitizers, which follow swapcontext but not a bare stack switch, and on other machines,
// the switch is swapcontext.
#pragma once

#include <ucontext.h>

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LACT_EMULATOR_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LACT_EMULATOR_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && !defined(LACT_EMULATOR_SANITIZED)
#define LACT_EMULATOR_STACK_SWITCH 1
#endif

namespace cuda_emulation {

// Where a suspended fiber (or the scheduler) resumes.
struct FiberContext {
#ifdef LACT_EMULATOR_STACK_SWITCH
  void* stack_pointer = nullptr;
#else
  ucontext_t context;
#endif
};

#ifdef LACT_EMULATOR_STACK_SWITCH

// Pushes rbp, rbx, r12-r15 and the SSE and x87 control words (the System V ABI's callee-saved state), stores the
// stack pointer in *save, loads `load` and pops the same state from there: `ret` then continues where that stack's
// owner last called this, or at the entry function start_fiber placed there.
[[gnu::naked, gnu::noinline]] inline void switch_stacks(void** /*save: rdi*/, void* /*load: rsi*/) {
  asm("pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

inline void switch_fiber(FiberContext& from, FiberContext& to) { switch_stacks(&from.stack_pointer, to.stack_pointer); }

// Lays out `stack` as switch_stacks leaves a suspended one: the caller's control words, zeroed registers, `entry` as
// the return address, and below the top a null slot where entry's own return address would be (entry is entered as
// if called: the stack pointer 8 past a multiple of 16). entry must never return: it ends by switching away.
inline void start_fiber(FiberContext& fiber, std::vector<char>& stack, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack.data() + stack.size()) & ~uintptr_t{15};
  auto* slot = reinterpret_cast<uint64_t*>(top);
  slot[-1] = 0;
  slot[-2] = reinterpret_cast<uint64_t>(entry);
  for (int r = 3; r <= 8; ++r) slot[-r] = 0;  // rbp, rbx, r12, r13, r14, r15
  uint32_t mxcsr;
  uint16_t x87;
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(x87));
  slot[-9] = 0;
  std::memcpy(&slot[-9], &mxcsr, sizeof mxcsr);
  std::memcpy(reinterpret_cast<char*>(&slot[-9]) + 4, &x87, sizeof x87);
  fiber.stack_pointer = &slot[-9];
}

#else

inline void switch_fiber(FiberContext& from, FiberContext& to) { swapcontext(&from.context, &to.context); }

// makecontext's entry (its own function: getcontext returns twice, like setjmp, and must not share a frame with
// the caller's variables). entry must never return: it ends by switching away.
[[gnu::noinline]] inline void start_fiber(FiberContext& fiber, std::vector<char>& stack, void (*entry)()) {
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack.data();
  fiber.context.uc_stack.ss_size = stack.size();
  fiber.context.uc_link = nullptr;
  makecontext(&fiber.context, entry, 0);
}

#endif

}  // namespace cuda_emulation
