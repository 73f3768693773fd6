// Tensor memory from the system. An encode maps and touches gigabytes of intermediates, and on a virtual machine
// a page fault costs several microseconds: at one per 4 KiB the first encode of a process spent 2.7 s of 7 s in
// the kernel (2 views 128x128, 24 layers, 2 threads). So blocks of 1 MiB and more are mapped here and populated
// in one call (MADV_POPULATE_WRITE) instead of a fault per page, and those of 2 MiB and more start on a 2 MiB
// boundary, advised for transparent huge pages: one page per 512. (Measured here, mapping and filling a block:
// 1.5 MiB 1.65 ms at 4 KiB pages; 2 MiB 0.09 ms on one huge page; 3 MiB 2.6 ms faulted, 1.35 ms populated.) The
// mapping ends at the block's last 4 KiB page, so no partial huge page is touched and the resident size stays
// the block's. Under AddressSanitizer every block comes from the allocator, which puts redzones around it.
#pragma once

#include <cstddef>

namespace lact {

// `bytes` of memory, 64-byte aligned, or nullptr when the system refuses.
void* allocate_block(size_t bytes);
// Returns a block from allocate_block with the same `bytes`.
void free_block(void* block, size_t bytes);

}  // namespace lact
