// Reading and writing files safely: inputs must be regular files (a FIFO or a device would block or stream
// forever), and every output is written to a temporary file beside its final name, checked (each write, the
// fsync, the close), then renamed over it. A crash, `kill -9` or a full disk therefore never leaves a partial
// file under a final name, and never destroys the file that was there before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lact {

// Throws Error(path, ...) unless `path` names a regular file (symlinks followed): missing, a folder, a FIFO,
// a device or a socket is refused before anything opens it.
void require_regular_file(const std::string& path);

// The whole regular file; Error naming it when it is missing, not regular, larger than `max_bytes` or unreadable.
std::string read_whole_file(const std::string& path, uint64_t max_bytes);

// An output file written atomically. Bytes go to a temporary file in the same folder (so the rename cannot
// cross filesystems); commit() checks, fsyncs and renames it over `path`. Destroyed without commit(), or when
// any step fails, it removes the temporary and leaves `path` as it was. Errors name `path`.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();
  const std::string& path() const { return path_; }

 private:
  void fail(const std::string& what);
  std::string path_, temp_;
  int fd_ = -1;
};

// write_file_atomically(path, bytes): AtomicFile in one call.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace lact
