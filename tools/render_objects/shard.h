// The training shard: one file a trainer can memory-map (format in README.md):
//   a JSON header line, space-padded to header_bytes (a multiple of 4096) and ending in '\n';
//   images  uint8   [objects, views, H, W, 4] at images.offset (straight RGBA, background (255,255,255,0));
//   cameras float32 [objects, views, 20]       at cameras.offset (fx, fy, cx, cy, c2w 4x4 row-major OpenCV).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cameras.h"
#include "rasterizer.h"

namespace ro {

class ShardWriter {
 public:
  // Creates (truncates) the file. `names` fixes the slots; `extra` is merged into the header (strings only).
  ShardWriter(const std::string& path, const std::vector<std::string>& names, int views, int height, int width,
              const std::vector<std::pair<std::string, std::string>>& extra = {});
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Stores one object's views in its slot. Thread-safe for distinct slots.
  void write(size_t slot, const std::vector<Image>& images, const std::vector<Camera>& cameras);

  // Drops the slots not marked ok (moving later objects down), appends the cameras, writes the header. Returns
  // the number of objects in the shard.
  size_t finish(const std::vector<bool>& ok);

 private:
  std::string header(const std::vector<std::string>& names, uint64_t images_offset, uint64_t cameras_offset) const;

  std::string path_;
  int fd_ = -1;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, std::string>> extra_;
  int views_, height_, width_;
  uint64_t header_bytes_ = 0, object_bytes_ = 0;
  std::vector<float> cameras_;  // [slots, views, 20]
};

}  // namespace ro
