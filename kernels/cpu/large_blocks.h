// Tensor memory from the system. Blocks of 2 MiB and more are mapped 2 MiB-aligned and advised for transparent
// huge pages: an encode maps and touches gigabytes of intermediates, and at one page fault per 4 KiB the first
// encode of a process spent 2.7 s of 7 s in the kernel (2 views 128x128, 24 layers, 2 threads; a virtual
// machine's page faults are dear). With 2 MiB pages that is one fault per 512. The mapping ends at the block's
// last 4 KiB page, so a partial huge page is never touched and the resident size stays the block's.
// Under AddressSanitizer every block comes from the allocator instead, which puts redzones around it.
#pragma once

#include <cstddef>

namespace lact {

// `bytes` of memory, 64-byte aligned, or nullptr when the system refuses.
void* allocate_block(size_t bytes);
// Returns a block from allocate_block with the same `bytes`.
void free_block(void* block, size_t bytes);

}  // namespace lact
