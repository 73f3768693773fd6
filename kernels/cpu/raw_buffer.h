// Values in memory from allocate_block (kernels/cpu/large_blocks.h): not zeroed first, and large ones on huge
// pages. A rendered view's first use of a new scene state converts the whole state to bf16 (324 MiB of fp32 for
// the paper's model); in a std::vector that memory was zeroed, then faulted in 4 KiB at a time, then overwritten.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "kernels/cpu/large_blocks.h"

namespace lact {

template <class T>
class RawBuffer {
 public:
  RawBuffer() = default;
  RawBuffer(RawBuffer&& other) noexcept { swap(other); }
  RawBuffer& operator=(RawBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  RawBuffer(const RawBuffer&) = delete;
  RawBuffer& operator=(const RawBuffer&) = delete;
  ~RawBuffer() { free_block(data_, bytes_for(capacity_)); }

  // Room for `count` values; the contents are unspecified afterwards (kept when it already had the room).
  void resize(size_t count) {
    if (count > capacity_) {
      void* block = allocate_block(bytes_for(count));
      if (!block) throw std::bad_alloc();
      free_block(data_, bytes_for(capacity_));
      data_ = static_cast<T*>(block);
      capacity_ = count;
    }
    size_ = count;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  static size_t bytes_for(size_t count) { return (count * sizeof(T) + 63) / 64 * 64; }
  void swap(RawBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

using Bf16Buffer = RawBuffer<uint16_t>;  // bf16 values as their bits
using FloatBuffer = RawBuffer<float>;

}  // namespace lact
