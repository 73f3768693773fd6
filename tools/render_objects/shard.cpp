#include "shard.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ro {

namespace {

constexpr uint64_t kAlign = 4096;
constexpr int kCameraFloats = 20;

void pwrite_all(int fd, const void* data, size_t size, uint64_t offset, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
    p += n, size -= static_cast<size_t>(n), offset += static_cast<uint64_t>(n);
  }
}

void pread_all(int fd, void* data, size_t size, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(path + ": read failed");
    p += n, size -= static_cast<size_t>(n), offset += static_cast<uint64_t>(n);
  }
}

}  // namespace

ShardWriter::ShardWriter(const std::string& path, const std::vector<std::string>& names, int views, int height,
                         int width, const std::vector<std::pair<std::string, std::string>>& extra)
    : path_(path), names_(names), extra_(extra), views_(views), height_(height), width_(width) {
  object_bytes_ = static_cast<uint64_t>(views) * height * width * 4;
  // Reserve room for the largest header (all names, 20-digit offsets); dropping objects only shrinks it.
  const uint64_t big = 10000000000000000000ull;
  const size_t longest = header(names_, big, big).size() + 1;
  header_bytes_ = (longest + kAlign - 1) / kAlign * kAlign;
  cameras_.assign(names_.size() * static_cast<size_t>(views) * kCameraFloats, 0.0f);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
}

ShardWriter::~ShardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ShardWriter::header(const std::vector<std::string>& names, uint64_t images_offset,
                                uint64_t cameras_offset) const {
  nlohmann::ordered_json h;
  h["format"] = "lact-render-shard";
  h["version"] = 1;
  h["objects"] = names.size();
  h["views"] = views_;
  h["height"] = height_;
  h["width"] = width_;
  h["header_bytes"] = header_bytes_;
  h["images"] = {{"offset", images_offset},
                 {"dtype", "uint8"},
                 {"shape", {names.size(), views_, height_, width_, 4}},
                 {"layout", "RGBA, straight alpha; background pixels are (255, 255, 255, 0)"}};
  h["cameras"] = {{"offset", cameras_offset},
                  {"dtype", "<f4"},
                  {"shape", {names.size(), views_, kCameraFloats}},
                  {"layout",
                   "fx, fy, cx, cy (pixels, pixel centres at +0.5), then c2w 4x4 row-major; "
                   "OpenCV camera axes (x right, y down, z forward), world z-up"}};
  for (const auto& [key, value] : extra_) h[key] = value;
  h["names"] = names;
  return h.dump();
}

void ShardWriter::write(size_t slot, const std::vector<Image>& images, const std::vector<Camera>& cameras) {
  if (slot >= names_.size() || images.size() != static_cast<size_t>(views_) || cameras.size() != images.size())
    throw std::runtime_error(path_ + ": object does not fit the shard");
  const size_t view_bytes = static_cast<size_t>(height_) * width_ * 4;
  for (size_t v = 0; v < images.size(); ++v) {
    if (images[v].width != width_ || images[v].height != height_ || images[v].rgba.size() != view_bytes)
      throw std::runtime_error(path_ + ": image size does not match the shard");
    pwrite_all(fd_, images[v].rgba.data(), view_bytes, header_bytes_ + slot * object_bytes_ + v * view_bytes, path_);
    float* cam = &cameras_[(slot * views_ + v) * kCameraFloats];
    cam[0] = static_cast<float>(cameras[v].fx), cam[1] = static_cast<float>(cameras[v].fy);
    cam[2] = static_cast<float>(cameras[v].cx), cam[3] = static_cast<float>(cameras[v].cy);
    const Mat4 c2w = cameras[v].c2w();
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) cam[4 + r * 4 + c] = static_cast<float>(c2w.m[r][c]);
  }
}

size_t ShardWriter::finish(const std::vector<bool>& ok) {
  std::vector<std::string> kept;
  std::vector<float> cams;
  std::vector<uint8_t> buffer;
  const size_t per_object_cams = static_cast<size_t>(views_) * kCameraFloats;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (i >= ok.size() || !ok[i]) continue;
    const size_t j = kept.size();
    if (j != i) {  // move the images down over a dropped slot
      buffer.resize(object_bytes_);
      pread_all(fd_, buffer.data(), buffer.size(), header_bytes_ + i * object_bytes_, path_);
      pwrite_all(fd_, buffer.data(), buffer.size(), header_bytes_ + j * object_bytes_, path_);
    }
    kept.push_back(names_[i]);
    cams.insert(cams.end(), cameras_.begin() + static_cast<std::ptrdiff_t>(i * per_object_cams),
                cameras_.begin() + static_cast<std::ptrdiff_t>((i + 1) * per_object_cams));
  }
  const uint64_t cameras_offset = header_bytes_ + kept.size() * object_bytes_;
  if (!cams.empty()) pwrite_all(fd_, cams.data(), cams.size() * sizeof(float), cameras_offset, path_);
  const uint64_t end = cameras_offset + cams.size() * sizeof(float);
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) throw std::runtime_error(path_ + ": cannot truncate");
  std::string h = header(kept, header_bytes_, cameras_offset);
  h.resize(header_bytes_ - 1, ' ');
  h.push_back('\n');
  pwrite_all(fd_, h.data(), h.size(), 0, path_);
  if (::close(fd_) != 0) throw std::runtime_error(path_ + ": close failed");
  fd_ = -1;
  return kept.size();
}

}  // namespace ro
