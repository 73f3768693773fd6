#include "core/image_size.h"

#include "system/error.h"

namespace lact {

std::pair<int, int> parse_size(const std::string& text, const std::string& flag) {
  if (text.empty()) return {0, 0};
  int h = 0, w = 0;
  // HxW, or a single N for NxN, as every size flag reads it (--window, lact bench --size).
  const std::string hw = text.find_first_of("xX") == std::string::npos ? text + "x" + text : text;
  if (!parse_image_size(hw, h, w))
    throw Error(flag, "'" + text.substr(0, 40) +
                          "' is not a size like 256x256 or 256 (height x width, or N for NxN; each 1.." +
                          std::to_string(kMaxImageSide) + ")");
  return {h, w};
}

Camera camera_at_size(const Camera& camera, int height, int width) {
  if (camera.width == width && camera.height == height) return camera;
  if (camera.width < 1 || camera.height < 1) throw Error("camera", "has no size to scale from");
  Camera c = camera;
  const double sx = static_cast<double>(width) / camera.width, sy = static_cast<double>(height) / camera.height;
  c.width = width, c.height = height;
  c.fx = static_cast<float>(camera.fx * sx), c.cx = static_cast<float>(camera.cx * sx);
  c.fy = static_cast<float>(camera.fy * sy), c.cy = static_cast<float>(camera.cy * sy);
  return c;
}

}  // namespace lact
