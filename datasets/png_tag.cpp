#include "datasets/png_tag.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

namespace lact {

namespace {

constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
constexpr size_t kSignatureBytes = 8;
constexpr size_t kIhdrChunkBytes = 4 + 4 + 13 + 4;  // length, type, data, CRC
constexpr size_t kTagAt = kSignatureBytes + kIhdrChunkBytes;
// tEXt data: keyword, NUL, text.
constexpr char kTagData[] = "Software\0lact";
constexpr size_t kTagDataBytes = sizeof(kTagData) - 1;
constexpr size_t kTaggedPrefixBytes = kTagAt + 4 + 4 + kTagDataBytes + 4;

// PNG's CRC-32 (ISO 3309, the polynomial reversed), bit by bit: it runs over 17 bytes per file.
uint32_t crc32(const unsigned char* data, size_t size) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

void append_big_endian(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
}

std::string tag_chunk() {
  std::string type_and_data = "tEXt";
  type_and_data.append(kTagData, kTagDataBytes);
  std::string chunk;
  append_big_endian(chunk, static_cast<uint32_t>(kTagDataBytes));
  chunk += type_and_data;
  append_big_endian(chunk, crc32(reinterpret_cast<const unsigned char*>(type_and_data.data()), type_and_data.size()));
  return chunk;
}

bool starts_with_ihdr(const std::string& png) {
  return png.size() >= kTagAt && png.compare(0, kSignatureBytes, kSignature, kSignatureBytes) == 0 &&
         png.compare(kSignatureBytes, 8, std::string("\0\0\0\x0dIHDR", 8)) == 0;
}

}  // namespace

std::string with_lact_tag(const std::string& png) {
  if (!starts_with_ihdr(png)) return png;
  std::string tagged = png.substr(0, kTagAt);
  tagged += tag_chunk();
  tagged.append(png, kTagAt, std::string::npos);
  return tagged;
}

bool is_lact_png(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return false;  // a FIFO would block the read
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return false;
  std::string prefix(kTaggedPrefixBytes, '\0');
  if (std::fread(prefix.data(), 1, prefix.size(), file.get()) != prefix.size()) return false;
  return starts_with_ihdr(prefix) && prefix.compare(kTagAt, std::string::npos, tag_chunk()) == 0;
}

}  // namespace lact
