#include "kernels/cpu/large_blocks.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace lact {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = 4096;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMapBlocks = false;
#else
constexpr bool kMapBlocks = true;
#endif
#else
constexpr bool kMapBlocks = true;
#endif

bool mapped(size_t bytes) { return kMapBlocks && bytes >= kHugePage; }
size_t page_rounded(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

void* allocate_block(size_t bytes) {
  if (!mapped(bytes)) return std::aligned_alloc(64, bytes);
  const size_t length = page_rounded(bytes);
  // Over-map by one huge page, then unmap the ends so the block starts on a 2 MiB boundary.
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t end = begin + length + kHugePage;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  void* block = reinterpret_cast<void*>(aligned);
  madvise(block, length, MADV_HUGEPAGE);  // advice only: where THP is off the block keeps 4 KiB pages
  return block;
}

void free_block(void* block, size_t bytes) {
  if (!block) return;
  if (!mapped(bytes)) return std::free(block);
  munmap(block, page_rounded(bytes));
}

}  // namespace lact
