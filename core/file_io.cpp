#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int error) { return std::strerror(error); }

// A name beside `path` that no other writer picks: hidden, the final name in it, process id and a random tag.
std::string temporary_name(const std::string& path, unsigned attempt) {
  static std::atomic<unsigned> counter{0};
  static const unsigned seed = std::random_device{}();
  const fs::path p(path);
  char tag[48];
  std::snprintf(tag, sizeof tag, ".tmp-%d-%08x-%u", static_cast<int>(getpid()), seed, counter++ + attempt);
  const std::string name = "." + p.filename().string().substr(0, 120) + tag;
  return (p.parent_path() / name).string();
}

}  // namespace

void require_regular_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    throw Error(path, std::string("cannot open file (") + (error == ENOENT ? "no such file" : errno_text(error)) + ")");
  }
  if (S_ISDIR(info.st_mode)) throw Error(path, "is a folder, not a file");
  if (!S_ISREG(info.st_mode)) throw Error(path, "is not a regular file (a FIFO, device or socket)");
}

std::string read_whole_file(const std::string& path, uint64_t max_bytes) {
  require_regular_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path, "cannot open file (" + errno_text(errno) + ")");
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {  // replaced between the check and the open
    ::close(fd);
    throw Error(path, "is not a regular file");
  }
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    throw Error(path, "is " + std::to_string(info.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                          " this reader accepts");
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : 0;
      ::close(fd);
      throw Error(path, n < 0 ? "read error (" + errno_text(error) + ")" : "file shrank while being read");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("an output file name is empty");
  for (unsigned attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_ = temporary_name(path_, attempt);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int error = errno;
    temp_.clear();
    throw Error(path_, "cannot write here (" + errno_text(error) + ")");
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what) {
  const int error = errno;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  throw Error(path_, what + " (" + errno_text(error) + (error == ENOSPC || error == EFBIG ? ": disk full?" : "") + ")");
}

void AtomicFile::write(const void* data, size_t size) {
  if (fd_ < 0) throw Error(path_, "written after it was finished or failed");
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      fail("write failed");
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(path_, "finished twice or after a failure");
  if (::fsync(fd_) != 0) fail("cannot flush to disk");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    fd_ = -1;
    fail("cannot close");
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot replace the file");
  temp_.clear();
  // The rename itself is durable once the folder is synced (best effort: not every filesystem allows it).
  const fs::path folder = fs::path(path_).parent_path();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace lact
