// bf16 values (as uint16_t) in memory from allocate_block (kernels/cpu/large_blocks.h): not zeroed first, and large
// ones on huge pages. A rendered view's first use of a new scene state converts the whole state to bf16 (324 MiB
// of fp32 for the paper's model); in a std::vector that memory was zeroed, then faulted in 4 KiB at a time, then
// overwritten.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/cpu/large_blocks.h"

namespace lact {

class Bf16Buffer {
 public:
  Bf16Buffer() = default;
  Bf16Buffer(Bf16Buffer&& other) noexcept { swap(other); }
  Bf16Buffer& operator=(Bf16Buffer&& other) noexcept {
    swap(other);
    return *this;
  }
  Bf16Buffer(const Bf16Buffer&) = delete;
  Bf16Buffer& operator=(const Bf16Buffer&) = delete;
  ~Bf16Buffer() { free_block(data_, capacity_bytes()); }

  // Room for `count` values; the contents are unspecified afterwards (kept when it already had the room).
  void resize(size_t count);
  uint16_t* data() { return data_; }
  const uint16_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  size_t capacity_bytes() const { return (capacity_ * sizeof(uint16_t) + 63) / 64 * 64; }
  void swap(Bf16Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  uint16_t* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace lact
