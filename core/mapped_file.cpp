#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace lact {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path, std::string("cannot open file (") + std::strerror(errno) + ")");
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(path, "not a regular file");
  }
  const size_t size = static_cast<size_t>(info.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw Error(path, std::string("cannot map file (") + std::strerror(error) + ")");
    }
  }
  ::close(fd);  // the mapping keeps the file
  return std::shared_ptr<MappedFile>(new MappedFile(static_cast<uint8_t*>(data), size));
}

MappedFile::~MappedFile() {
  if (data_) munmap(data_, size_);
}

}  // namespace lact
