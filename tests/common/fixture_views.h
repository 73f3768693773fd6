// Reading the official fixture's cameras and images (expected.safetensors) into the engine's types.
#pragma once

#include <string>
#include <vector>

#include "core/camera.h"
#include "core/safetensors.h"

namespace lact::test {

// Camera `index` of "<prefix>_fxfycxcy" and "<prefix>_c2w" (prefix "input" or "target").
inline Camera fixture_camera(const SafetensorsFile& f, const std::string& prefix, int index, int height, int width) {
  const auto k = f.read_floats(prefix + "_fxfycxcy"), m = f.read_floats(prefix + "_c2w");
  Camera c;
  c.width = width, c.height = height;
  c.fx = k[index * 4], c.fy = k[index * 4 + 1], c.cx = k[index * 4 + 2], c.cy = k[index * 4 + 3];
  for (int i = 0; i < 16; ++i) c.c2w[i] = m[index * 16 + i];
  return c;
}

// Image `index` of a [V, 3, H, W] planar tensor, as HWC.
inline Image image_from_planar(const std::vector<float>& planar, int index, int height, int width) {
  Image img{width, height, std::vector<float>(size_t(width) * height * 3)};
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < width * height; ++p) img.rgb[p * 3 + c] = planar[(size_t(index) * 3 + c) * width * height + p];
  return img;
}

// The fixture's input views (cameras and images).
inline std::vector<PosedImage> fixture_inputs(const SafetensorsFile& f) {
  const auto shape = f.entry("input_images").shape;
  const int inputs = int(shape[0]), height = int(shape[2]), width = int(shape[3]);
  const auto planar = f.read_floats("input_images");
  std::vector<PosedImage> views;
  for (int i = 0; i < inputs; ++i)
    views.push_back({fixture_camera(f, "input", i, height, width), image_from_planar(planar, i, height, width)});
  return views;
}

// The fixture's target cameras, at its input views' size.
inline std::vector<Camera> fixture_targets(const SafetensorsFile& f) {
  const auto shape = f.entry("input_images").shape;
  const int height = int(shape[2]), width = int(shape[3]), targets = int(f.entry("target_c2w").shape[0]);
  std::vector<Camera> cameras;
  for (int i = 0; i < targets; ++i) cameras.push_back(fixture_camera(f, "target", i, height, width));
  return cameras;
}

}  // namespace lact::test
