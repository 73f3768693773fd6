#include "pipeline/scratch_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "system/error.h"
#include "system/host_memory.h"

namespace lact {

namespace {

Error scratch_error(const std::string& dir, const std::string& what) { return Error("--scratch " + dir, what); }

// A file with no name in `dir`: O_TMPFILE, else a unique name unlinked at once (file systems without O_TMPFILE);
// -1 with errno set when neither can be made.
int try_open_unnamed(const std::string& dir) {
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;
  std::string pattern = dir + "/lact-scratch-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) unlink(name.data());
  return fd;
}

int open_unnamed(const std::string& dir) {
  const int fd = try_open_unnamed(dir);
  if (fd < 0) throw scratch_error(dir, std::strerror(errno));
  return fd;
}

}  // namespace

ScratchFile::ScratchFile(const std::string& dir, int64_t bytes) : dir_(dir), bytes_(bytes) {
  fd_ = open_unnamed(dir);
  const int reserved = posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (reserved != 0) {
    close(fd_);
    throw scratch_error(dir, "cannot reserve " + memory_size_text(bytes) + " for the encode's residual stream (" +
                                 std::strerror(reserved) + "; " + memory_size_text(free_disk_bytes(dir)) + " free)");
  }
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) close(fd_);  // the file had no name: its blocks are freed now
}

void ScratchFile::check_range(int64_t first, int64_t count, int64_t cols) const {
  const int64_t end = (first + count) * cols * static_cast<int64_t>(sizeof(float));
  if (first < 0 || count < 0 || cols < 0 || end > bytes_)
    throw std::logic_error("scratch file: rows past the reserved size");
}

void ScratchFile::write_rows(int64_t first, int64_t count, int64_t cols, const float* values) {
  check_range(first, count, cols);
  transfer(first * cols, count * cols, const_cast<float*>(values), true);
}

void ScratchFile::read_rows(int64_t first, int64_t count, int64_t cols, float* values) {
  check_range(first, count, cols);
  transfer(first * cols, count * cols, values, false);
}

// pwrite / pread of `floats` floats at float `offset`, resumed after short transfers and EINTR.
void ScratchFile::transfer(int64_t offset, int64_t floats, float* values, bool write) {
  auto* data = reinterpret_cast<char*>(values);
  int64_t at = offset * 4, left = floats * 4;
  while (left > 0) {
    const ssize_t n = write ? pwrite(fd_, data, static_cast<size_t>(left), static_cast<off_t>(at))
                            : pread(fd_, data, static_cast<size_t>(left), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw scratch_error(dir_, std::string(write ? "writing the residual stream: " : "reading it back: ") +
                                    (n == 0 ? "the file ended early" : std::strerror(errno)));
    data += n, at += n, left -= n;
  }
}

void check_scratch_space(const std::string& dir, int64_t bytes) {
  const std::string what = "the encode does not fit in memory and keeps its residual stream (" +
                           memory_size_text(bytes) + ") in a scratch file here";
  if (in_memory_file_system(dir))
    throw scratch_error(dir, what +
                                 ", but this directory is held in memory (tmpfs), which saves nothing: name a "
                                 "directory on disk");
  const int64_t free = free_disk_bytes(dir);
  if (free < 0) throw scratch_error(dir, what + ", but it cannot be read (" + std::strerror(errno) + ")");
  if (free < bytes) throw scratch_error(dir, what + ", but only " + memory_size_text(free) + " is free there");
}

void check_scratch_folder(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0)
    throw scratch_error(dir, std::string("cannot be used (") + std::strerror(errno) + "): name an existing folder");
  if (!S_ISDIR(info.st_mode)) throw scratch_error(dir, "is not a folder");
  // The file an encode would spill to, made and dropped at once (it has no name): the same open as ScratchFile's,
  // so permissions, a read-only file system or one without room for an inode all show here, before any work.
  const int fd = try_open_unnamed(dir);
  if (fd < 0)
    throw scratch_error(dir, std::string("no scratch file can be made in this folder (") + std::strerror(errno) + ")");
  close(fd);
}

std::string default_scratch_dir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

int64_t free_disk_bytes(const std::string& dir) {
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) return -1;
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

bool in_memory_file_system(const std::string& dir) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0) return false;
  return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

}  // namespace lact
