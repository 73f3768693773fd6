// A whole file mapped into memory, copy-on-write (writes through it stay in this process), unmapped when the
// last owner lets go. Model and state files are opened this way: what a run does not touch is never read,
// and tensors can use the bytes in place.
//
// A mapping shows what the file holds now, not what it held at open: another program that truncates the file
// makes a read of the lost pages raise SIGBUS, and one that rewrites it in place (`cp other.safetensors M`, NaNs
// written over a tensor) changes the numbers under a running render. So every mapping is guarded:
//  - a SIGBUS inside a live mapping ends lact with one line, "lact: FILE: changed while lact was using it
//    (truncated?)", and exit status 1 (any other SIGBUS goes to the handler that was there before, or kills);
//  - check_mapped_files_unchanged() compares each live mapping's file (through its open descriptor) with its
//    size and modification time at open; Model::encode and Model::render call it before they return a result,
//    so nothing computed from a changed file reaches a state or an image.
// A file replaced by rename (`mv new M`, an atomic re-export) leaves the mapped one as it was: the run goes on
// with the file it opened. Limit: a rewrite that keeps the size and the modification time (coarse timestamps:
// the same clock tick as the previous write before lact opened it) is not seen.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
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
  const std::string& path() const { return path_; }
  // Error(path, "changed while lact was using it ...") when the file's size or modification time is not what it
  // was at open.
  void check_unchanged() const;

 private:
  MappedFile(std::string path, int fd, uint8_t* data, size_t size, const struct timespec& modified);
  std::string path_;
  int fd_;  // kept open: the file itself is checked, whatever its name now points to
  uint8_t* data_;
  size_t size_;
  struct timespec modified_;
  std::string bus_message_;  // the SIGBUS line, formatted before any signal can need it
  int guard_slot_ = -1;      // this mapping's entry in the SIGBUS handler's table (-1: none)
};

// MappedFile::check_unchanged() for every mapping alive in the process (the first changed one throws).
void check_mapped_files_unchanged();

// The bytes of every mapping alive in the process, and how many of them are resident now (in this process's
// RSS): a memory estimate counts the mapped weights whole (an encode reads them all) and the rest of RSS apart.
struct MappedMemory {
  int64_t size = 0, resident = 0;
};
MappedMemory mapped_files_memory();

}  // namespace lact
