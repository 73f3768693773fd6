#include "kernels/cpu/bf16_buffer.h"

#include <new>

namespace lact {

void Bf16Buffer::resize(size_t count) {
  if (count > capacity_) {
    const size_t bytes = (count * sizeof(uint16_t) + 63) / 64 * 64;
    void* block = allocate_block(bytes);
    if (!block) throw std::bad_alloc();
    free_block(data_, capacity_bytes());
    data_ = static_cast<uint16_t*>(block);
    capacity_ = count;
  }
  size_ = count;
}

}  // namespace lact
