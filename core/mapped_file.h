// A whole file mapped into memory, copy-on-write (writes through it stay in this process), unmapped when the
// last owner lets go. Model and state files are opened this way: what a run does not touch is never read,
// and tensors can use the bytes in place.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace lact {

class MappedFile {
 public:
  // Throws Error naming the path. An empty file maps to no memory (data() null).
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  size_t size_;
};

}  // namespace lact
