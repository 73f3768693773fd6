#include "core/tokens.h"

#include <cmath>

#include "system/error.h"

namespace lact {

void compute_rays(const Camera& cam, int height, int width, std::vector<float>& origins,
                  std::vector<float>& directions) {
  const auto& m = cam.c2w;
  const size_t pixels = static_cast<size_t>(height) * width;
  origins.resize(pixels * 3);
  directions.resize(pixels * 3);
  for (int v = 0; v < height; ++v)
    for (int u = 0; u < width; ++u) {
      // In float, as the official code does, then rotated and normalised.
      const double x = (static_cast<float>(u) + 0.5f - cam.cx) / cam.fx;
      const double y = (static_cast<float>(v) + 0.5f - cam.cy) / cam.fy;
      double d[3];
      for (int r = 0; r < 3; ++r) d[r] = m[r * 4 + 0] * x + m[r * 4 + 1] * y + m[r * 4 + 2];
      const double norm = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      const size_t i = (static_cast<size_t>(v) * width + u) * 3;
      for (int r = 0; r < 3; ++r) {
        directions[i + r] = static_cast<float>(d[r] / norm);
        origins[i + r] = static_cast<float>(m[r * 4 + 3]);
      }
    }
}

std::vector<float> build_tokens(const std::vector<PosedImage>& views, int height, int width, int patch) {
  if (height % patch || width % patch)
    throw Error("image size " + std::to_string(height) + "x" + std::to_string(width) +
                " is not divisible by the patch size " + std::to_string(patch));
  const int rows = height / patch, cols = width / patch;
  const size_t token_size = static_cast<size_t>(patch) * patch * 12;
  const size_t tokens_per_view = static_cast<size_t>(rows) * cols;
  for (size_t view = 0; view < views.size(); ++view) {
    const Image& image = views[view].image;
    if (!image.rgb.empty() && (image.width != width || image.height != height))
      throw Error("view " + std::to_string(view) + " image is " + std::to_string(image.height) + "x" +
                  std::to_string(image.width) + ", expected " + std::to_string(height) + "x" + std::to_string(width));
  }
  std::vector<float> tokens(views.size() * tokens_per_view * token_size, 0.0f);
  // Views in parallel: 48 views at 512x512 are 12.6M rays, a visible part of a GPU encode if serial.
#pragma omp parallel for schedule(dynamic) if (views.size() > 1 && tokens_per_view * views.size() > 4096)
  for (size_t view = 0; view < views.size(); ++view) {
    const PosedImage& pv = views[view];
    const bool has_image = !pv.image.rgb.empty();
    std::vector<float> origins, directions;
    compute_rays(pv.camera, height, width, origins, directions);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const size_t pixel = static_cast<size_t>(y) * width + x;
        const size_t token = view * tokens_per_view + static_cast<size_t>(y / patch) * cols + x / patch;
        float* c = tokens.data() + token * token_size + static_cast<size_t>((y % patch) * patch + x % patch) * 12;
        const float* o = origins.data() + pixel * 3;
        const float* d = directions.data() + pixel * 3;
        c[0] = o[0], c[1] = o[1], c[2] = o[2];
        c[3] = d[0], c[4] = d[1], c[5] = d[2];
        c[6] = o[1] * d[2] - o[2] * d[1];
        c[7] = o[2] * d[0] - o[0] * d[2];
        c[8] = o[0] * d[1] - o[1] * d[0];
        if (has_image)
          for (int ch = 0; ch < 3; ++ch) c[9 + ch] = pv.image.rgb[pixel * 3 + ch] * 2.0f - 1.0f;
      }
  }
  return tokens;
}

std::vector<Image> unpatchify(const std::vector<float>& patches, int views, int height, int width, int patch) {
  std::vector<Image> images(views);
  for (int view = 0; view < views; ++view) {
    Image& img = images[view];
    img.width = width;
    img.height = height;
    img.rgb.resize(static_cast<size_t>(width) * height * 3);
    unpatchify_view(patches, view, height, width, patch, img.rgb.data());
  }
  return images;
}

void unpatchify_view(const std::vector<float>& patches, int view, int height, int width, int patch, float* out) {
  const int cols = width / patch;
  const size_t tokens_per_view = static_cast<size_t>(height / patch) * cols;
  const size_t token_size = static_cast<size_t>(patch) * patch * 3;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const size_t token = view * tokens_per_view + static_cast<size_t>(y / patch) * cols + x / patch;
      const float* src = patches.data() + token * token_size + static_cast<size_t>((y % patch) * patch + x % patch) * 3;
      float* dst = out + (static_cast<size_t>(y) * width + x) * 3;
      dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
    }
}

}  // namespace lact
