// A streamed encode's residual stream on disk when it does not fit in memory (lact --scratch DIR; default $TMPDIR,
// else /tmp). The file has no name (O_TMPFILE, or created and unlinked at once where the file system lacks it),
// so nothing is left behind however the process ends, kill -9 included. Its size is reserved when it is opened
// (posix_fallocate): a disk too small is one line before the encode, not a failure in its last layer.
#pragma once

#include <cstdint>
#include <string>

#include "core/residual_store.h"

namespace lact {

class ScratchFile final : public ResidualStore {
 public:
  // `bytes` reserved in `dir`; Error naming --scratch and the directory when that cannot be done.
  ScratchFile(const std::string& dir, int64_t bytes);
  ~ScratchFile() override;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  void write_rows(int64_t first, int64_t count, int64_t cols, const float* values) override;
  void read_rows(int64_t first, int64_t count, int64_t cols, float* values) override;

 private:
  void check_range(int64_t first, int64_t count, int64_t cols) const;
  void transfer(int64_t offset, int64_t floats, float* values, bool write);  // write: only read from values
  std::string dir_;
  int64_t bytes_ = 0;
  int fd_ = -1;
};

// Error naming --scratch DIR unless `dir` can take `bytes` of residual stream: on disk (not tmpfs) with the room.
void check_scratch_space(const std::string& dir, int64_t bytes);
// Before any work, for a --scratch the user named: Error naming --scratch DIR unless it is a folder in which a
// scratch file can be made (whether the encode will spill is known only later, after the memory check).
void check_scratch_folder(const std::string& dir);
// --scratch's default: $TMPDIR where set, else /tmp.
std::string default_scratch_dir();
// Bytes this user may still write on the file system holding `dir` (statvfs), -1 when it cannot be read.
int64_t free_disk_bytes(const std::string& dir);
// Whether `dir` is on a file system held in memory (tmpfs, ramfs): spilling there would save nothing.
bool in_memory_file_system(const std::string& dir);

}  // namespace lact
