#include "system/file_identity.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace {

constexpr uint64_t kWholeFileBytes = 64ull << 20;  // hashed whole up to here
constexpr uint64_t kHeadBytes = 1ull << 20;        // above: the first MiB (the header and the first tensors)
constexpr uint64_t kBlockBytes = 64ull << 10;      // and this many bytes ...
constexpr uint64_t kBlocks = 64;                   // ... at this many places, the last one ending the file

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull, kPrime2 = 0xC2B2AE3D27D4EB4Full, kPrime3 = 0x165667B19E3779F9ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(&v, p, 8);
#else
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // the same digits on any byte order
#endif
  return v;
}

// A streaming 64-bit hash, four independent lanes over 32-byte stripes (fast: several GB/s), the result the same
// however the bytes are split between update() calls.
class Hasher {
 public:
  void update(const uint8_t* p, uint64_t n) {
    total_ += n;
    while (n > 0 && pending_ > 0) {
      stripe_[pending_++] = *p++, --n;
      if (pending_ == 32) mix_stripe(stripe_), pending_ = 0;
    }
    for (; n >= 32; p += 32, n -= 32) mix_stripe(p);
    for (; n > 0; --n) stripe_[pending_++] = *p++;
  }
  uint64_t finish() const {
    uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
    for (uint64_t lane : lanes_) h = (h ^ round(0, lane)) * kPrime1 + kPrime3;
    h += total_;
    for (size_t i = 0; i < pending_; ++i) h = rotl(h ^ (stripe_[i] * kPrime3), 11) * kPrime1;
    h ^= h >> 33, h *= kPrime2, h ^= h >> 29, h *= kPrime3, h ^= h >> 32;
    return h;
  }

 private:
  static uint64_t round(uint64_t lane, uint64_t word) { return rotl(lane + word * kPrime2, 31) * kPrime1; }
  void mix_stripe(const uint8_t* p) {
    for (int i = 0; i < 4; ++i) lanes_[i] = round(lanes_[i], load_le64(p + 8 * i));
  }
  uint64_t lanes_[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  uint8_t stripe_[32] = {};
  size_t pending_ = 0;
  uint64_t total_ = 0;
};

// The byte ranges hashed for a file of `size` bytes.
std::vector<std::pair<uint64_t, uint64_t>> hashed_ranges(uint64_t size) {
  if (size <= kWholeFileBytes) return {{0, size}};
  std::vector<std::pair<uint64_t, uint64_t>> ranges{{0, kHeadBytes}};
  const uint64_t span = size - kHeadBytes - kBlockBytes;
  for (uint64_t i = 0; i < kBlocks; ++i) ranges.push_back({kHeadBytes + span / (kBlocks - 1) * i, kBlockBytes});
  ranges.back().first = size - kBlockBytes;
  return ranges;
}

std::string format_identity(uint64_t size, uint64_t hash) {
  char text[48];
  std::snprintf(text, sizeof(text), "%llu:%016llx", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace

std::string content_identity(const uint8_t* data, uint64_t size) {
  Hasher hasher;
  for (const auto& [offset, length] : hashed_ranges(size)) hasher.update(data + offset, length);
  return format_identity(size, hasher.finish());
}

std::string file_identity(const std::string& path) {
  struct stat info {};
  const int fd = open_regular_file(path, info);
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  Hasher hasher;
  std::vector<uint8_t> buffer(kHeadBytes);
  for (auto [offset, length] : hashed_ranges(size))
    while (length > 0) {
      const ssize_t got = pread(fd, buffer.data(), std::min<uint64_t>(length, buffer.size()), offset);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        const int error = errno;
        ::close(fd);
        throw Error(path, got == 0 ? std::string("became shorter while it was read")
                                   : std::string("cannot read (") + std::strerror(error) + ")");
      }
      hasher.update(buffer.data(), static_cast<uint64_t>(got));
      offset += static_cast<uint64_t>(got), length -= static_cast<uint64_t>(got);
    }
  ::close(fd);
  return format_identity(size, hasher.finish());
}

}  // namespace lact
