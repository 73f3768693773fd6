// Pixels the caller holds (a numpy array, a decoded image), described in place: the model reads input views
// through this without taking a copy where their layout already is the one its kernels read.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lact {

// `count` RGB float32 images of height x width at `data`, never owned: the memory must outlive the call it is
// given to. Strides are in floats (any order numpy can describe: Fortran order, slices, negative steps).
struct PixelView {
  const float* data = nullptr;
  int64_t count = 0, height = 0, width = 0;
  std::array<int64_t, 4> strides{};  // image, row, pixel, channel (3 channels)

  // The layout the kernels read: [count, height, width, 3] packed.
  static PixelView packed(const float* data, int64_t count, int64_t height, int64_t width);
  bool is_packed() const;
  // Throws Error(where, ...) for no data or an extent outside [1, kMaxImageSide] (count: at least 1).
  void check(const std::string& where) const;
};

// The view's pixels packed: `view.data` itself when is_packed() (no copy), else copied once into `storage`.
const float* packed_pixels(const PixelView& view, std::vector<float>& storage);

// Bytes of input pixels the engine has copied on the host since the process started (packed_pixels' copies
// and the packing of separately held images): what the Python module's zero-copy test reads.
int64_t input_pixel_bytes_copied();
void count_input_pixel_copy(int64_t bytes);

}  // namespace lact
