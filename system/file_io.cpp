#include "system/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>

#include "system/error.h"
#include "system/signal_cleanup.h"

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

int open_regular_file(const std::string& path, struct stat& info) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    throw Error(path, std::string("cannot open file (") + (error == ENOENT ? "no such file" : errno_text(error)) + ")");
  }
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const bool folder = S_ISDIR(info.st_mode);
    ::close(fd);
    throw Error(path, folder ? "is a folder, not a file" : "is not a regular file (a FIFO, device or socket)");
  }
  return fd;
}

std::string absolute_path(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

std::string read_whole_file(const std::string& path, uint64_t max_bytes) {
  struct stat info {};
  const int fd = open_regular_file(path, info);
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

namespace {

// True when `path` (absolute, its folder's links already resolved) lies in the kernel's folders of devices and views.
bool lexically_under_system_folder(const fs::path& path) {
  for (const char* root : {"/dev", "/proc", "/sys"}) {
    const fs::path inside = path.lexically_relative(root);
    if (!inside.empty() && *inside.begin() != "..") return true;
  }
  return false;
}

std::mutex new_files_mutex;
std::set<std::string> new_files;  // resolved paths that a commit must not replace

bool must_be_new(const std::string& resolved) {
  std::lock_guard<std::mutex> lock(new_files_mutex);
  return new_files.count(resolved) > 0;
}

Error appeared_meanwhile(const std::string& shown) {
  return Error(shown, "appeared while this run worked (another run wrote it?): kept; pass --force to replace it");
}

// The file being replaced keeps its permission bits (a private 0600 state stayed private only until --force
// replaced it by a new file at 0666 less the umask). Best effort: a file that is gone or not ours keeps the new one's.
void keep_permissions_of(const std::string& path, const std::string& temporary) {
  struct stat old {};
  if (::lstat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode)) ::chmod(temporary.c_str(), old.st_mode & 0777);
}

// rename_into_place, naming `shown` (the path as the user gave it) in its errors.
void move_into_place(const std::string& temporary, const std::string& path, const std::string& shown,
                     bool never_replace) {
  if (!never_replace && !must_be_new(path)) {
    keep_permissions_of(path, temporary);
    if (::rename(temporary.c_str(), path.c_str()) != 0)
      throw Error(shown, "cannot replace the file (" + errno_text(errno) + ")");
    return;
  }
  if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EEXIST) throw appeared_meanwhile(shown);
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    throw Error(shown, "cannot move the finished file into place (" + errno_text(errno) + ")");
  // A filesystem without RENAME_NOREPLACE: a hard link is never made over an existing name either.
  if (::link(temporary.c_str(), path.c_str()) == 0) {
    ::unlink(temporary.c_str());
    return;
  }
  if (errno == EEXIST) throw appeared_meanwhile(shown);
  throw Error(shown, "cannot move the finished file into place (" + errno_text(errno) + ")");
}

// The next name in a chain of links from `link` (absolute), resolved against the link's folder.
fs::path link_target(const fs::path& link, const std::string& shown) {
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size());
  if (n < 0 || static_cast<size_t>(n) >= target.size())
    throw Error(shown, "cannot read the link " + link.string() + " (" + errno_text(errno) + ")");
  target.resize(static_cast<size_t>(n));
  const fs::path next(target);
  return (next.is_absolute() ? next : link.parent_path() / next).lexically_normal();
}

}  // namespace

void check_working_folder_for(const std::string& path) {
  if (path.empty() || path[0] == '/') return;
  char buffer[PATH_MAX];
  if (::getcwd(buffer, sizeof buffer) == nullptr && errno == ENOENT)
    throw Error(path,
                "the working folder no longer exists (removed?): cd to an existing folder or give an absolute path");
}

std::string resolve_output_path(const std::string& path) {
  if (path.empty()) throw Error("an output file name is empty");
  check_working_folder_for(path);
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  for (int hop = 0; hop < 40 && !ec; ++hop) {
    const fs::path folder = fs::weakly_canonical(p.parent_path(), ec);  // the folder's real place
    if (ec) break;
    const fs::path name = p.filename();
    if (name.empty() || name == "." || name == "..") throw Error(path, "is a folder, not a file name");
    p = folder / name;
    if (lexically_under_system_folder(p))
      throw Error(path, "is under /dev, /proc or /sys (" + p.string() + "): not a file lact writes, refused");
    struct stat info {};
    if (::lstat(p.c_str(), &info) != 0) {
      if (errno == ENOENT) return p.string();
      throw Error(path, "cannot write here (" + errno_text(errno) + ")");
    }
    if (S_ISREG(info.st_mode)) return p.string();
    if (S_ISDIR(info.st_mode)) throw Error(path, "is a folder, not a file name");
    if (!S_ISLNK(info.st_mode)) throw Error(path, "exists and is not a regular file (a FIFO, device or socket)");
    p = link_target(p, path);  // written through: the link stays a link
  }
  if (ec) throw Error(path, "cannot resolve this output name (" + ec.message() + ")");
  throw Error(path, "too many levels of links");
}

bool under_system_folder(const std::string& path) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return !ec && lexically_under_system_folder(real);
}

void require_new_file(const std::string& path) {
  const std::string resolved = resolve_output_path(path);
  std::lock_guard<std::mutex> lock(new_files_mutex);
  new_files.insert(resolved);
}

void allow_replacing(const std::string& path) {
  const std::string resolved = resolve_output_path(path);
  std::lock_guard<std::mutex> lock(new_files_mutex);
  new_files.erase(resolved);
}

void rename_into_place(const std::string& temporary, const std::string& path) {
  move_into_place(temporary, path, path, false);
}

AtomicFile::AtomicFile(std::string path, Replace replace) : path_(std::move(path)), replace_(replace) {
  target_ = resolve_output_path(path_);
  int error = 0;
  for (unsigned attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_ = temporary_name(target_, attempt);
    {
      // Registered and created as one step: the signal cleanup runs on a thread of its own, and its unlink must
      // not come between the two (the file made after it would stay).
      const SignalsHeld held;
      temp_token_ = register_temporary(temp_);  // before it exists: a signal from now on removes it
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    }
    if (fd_ >= 0) break;
    error = errno;
    unregister_temporary(temp_token_);
    temp_token_ = -1;
    if (error != EEXIST) break;
  }
  if (fd_ < 0) {
    temp_.clear();
    throw Error(path_, "cannot write here (" + errno_text(error) + ")");
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  remove_temporary();
}

void AtomicFile::remove_temporary() {
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  unregister_temporary(temp_token_);  // after the unlink: a signal in between removes a name that is gone
  temp_token_ = -1;
}

void AtomicFile::fail(const std::string& what) {
  const int error = errno;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  remove_temporary();
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
  if (::close(fd) != 0) fail("cannot close");
  {
    // Renamed and unregistered as one step: the signal cleanup (on its own thread) removing the temporary just
    // before the rename would turn an interrupt into a failed rename's error line.
    const SignalsHeld held;
    try {
      move_into_place(temp_, target_, path_, replace_ == Replace::Never);
    } catch (...) {
      remove_temporary();
      throw;
    }
    temp_.clear();
    unregister_temporary(temp_token_);
    temp_token_ = -1;
  }
  // The rename itself is durable once the folder is synced (best effort: not every filesystem allows it).
  const int dir = ::open(fs::path(target_).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
