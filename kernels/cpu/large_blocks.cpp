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

constexpr size_t kSmallestMapped = size_t{1} << 20;

bool mapped(size_t bytes) { return kMapBlocks && bytes >= kSmallestMapped; }
size_t page_rounded(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

void* allocate_block(size_t bytes) {
  if (!mapped(bytes)) return std::aligned_alloc(64, bytes);
  const size_t length = page_rounded(bytes);
  const bool huge = bytes >= kHugePage;
  // Over-map by one huge page, then unmap the ends so the block starts on a 2 MiB boundary.
  const size_t slack = huge ? kHugePage : 0;
  void* raw = mmap(nullptr, length + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = huge ? (begin + kHugePage - 1) / kHugePage * kHugePage : begin;
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t end = begin + length + slack;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  void* block = reinterpret_cast<void*>(aligned);
  // Both are advice: where THP is off the block keeps 4 KiB pages; before Linux 5.14 pages fault in on first touch.
  if (huge) madvise(block, length, MADV_HUGEPAGE);
  madvise(block, length, MADV_POPULATE_WRITE);
  return block;
}

void free_block(void* block, size_t bytes) {
  if (!block) return;
  if (!mapped(bytes)) return std::free(block);
  munmap(block, page_rounded(bytes));
}

}  // namespace lact
