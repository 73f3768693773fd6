#include "core/pixel_view.h"

#include <atomic>

#include "core/camera.h"
#include "system/error.h"

namespace lact {

namespace {
std::atomic<int64_t> copied_bytes{0};
}  // namespace

PixelView PixelView::packed(const float* data, int64_t count, int64_t height, int64_t width) {
  PixelView view;
  view.data = data;
  view.count = count, view.height = height, view.width = width;
  view.strides = {height * width * 3, width * 3, 3, 1};
  return view;
}

bool PixelView::is_packed() const {
  const PixelView dense = packed(data, count, height, width);
  // A stride along an extent of 1 is never followed: any value describes the same memory.
  return (count == 1 || strides[0] == dense.strides[0]) && (height == 1 || strides[1] == dense.strides[1]) &&
         (width == 1 || strides[2] == dense.strides[2]) && strides[3] == 1;
}

void PixelView::check(const std::string& where) const {
  if (!data) throw Error(where, "no pixels");
  if (count < 1 || height < 1 || width < 1 || height > kMaxImageSide || width > kMaxImageSide)
    throw Error(where, std::to_string(count) + " images of " + std::to_string(height) + "x" + std::to_string(width) +
                           ": expected at least one image, each side in [1, " + std::to_string(kMaxImageSide) + "]");
}

const float* packed_pixels(const PixelView& view, std::vector<float>& storage) {
  if (view.is_packed()) return view.data;
  storage.resize(static_cast<size_t>(view.count * view.height * view.width * 3));
  float* out = storage.data();
  for (int64_t i = 0; i < view.count; ++i)
    for (int64_t y = 0; y < view.height; ++y)
      for (int64_t x = 0; x < view.width; ++x) {
        const float* pixel = view.data + i * view.strides[0] + y * view.strides[1] + x * view.strides[2];
        for (int c = 0; c < 3; ++c) *out++ = pixel[c * view.strides[3]];
      }
  count_input_pixel_copy(static_cast<int64_t>(storage.size() * sizeof(float)));
  return storage.data();
}

int64_t input_pixel_bytes_copied() { return copied_bytes.load(); }

void count_input_pixel_copy(int64_t bytes) { copied_bytes += bytes; }

}  // namespace lact
