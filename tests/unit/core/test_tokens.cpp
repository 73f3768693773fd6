// Rays against values worked out by hand; patchify / unpatchify against the index formula
// token = (view, y/p, x/p), offset = ((y%p)*p + x%p)*channels + c.
#include <gtest/gtest.h>

#include <cmath>

#include "core/tokens.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

Camera rotated_camera() {
  Camera c;
  c.width = 16, c.height = 8, c.fx = 2, c.fy = 4, c.cx = 1, c.cy = 1;
  // 90 degrees about z, centre (1, 2, 3).
  c.c2w = {0, -1, 0, 1, 1, 0, 0, 2, 0, 0, 1, 3, 0, 0, 0, 1};
  return c;
}

TEST(Rays, PixelCentresRotatedAndNormalised) {
  std::vector<float> o, d;
  compute_rays(rotated_camera(), 8, 16, o, d);
  // Pixel (u=0, v=0): camera ray ((0.5-1)/2, (0.5-1)/4, 1) = (-0.25, -0.125, 1); rotated: (0.125, -0.25, 1).
  const double n = std::sqrt(0.125 * 0.125 + 0.25 * 0.25 + 1.0);
  EXPECT_NEAR(d[0], 0.125 / n, 1e-7);
  EXPECT_NEAR(d[1], -0.25 / n, 1e-7);
  EXPECT_NEAR(d[2], 1.0 / n, 1e-7);
  EXPECT_EQ(o[0], 1.0f);
  EXPECT_EQ(o[1], 2.0f);
  EXPECT_EQ(o[2], 3.0f);
  // Pixel (u=3, v=5): camera ((3.5-1)/2, (5.5-1)/4, 1) = (1.25, 1.125, 1); rotated: (-1.125, 1.25, 1).
  const size_t i = (5 * 16 + 3) * 3;
  const double m = std::sqrt(1.125 * 1.125 + 1.25 * 1.25 + 1.0);
  EXPECT_NEAR(d[i + 0], -1.125 / m, 1e-7);
  EXPECT_NEAR(d[i + 1], 1.25 / m, 1e-7);
  EXPECT_NEAR(d[i + 2], 1.0 / m, 1e-7);
}

TEST(Tokens, PatchifyOrderAndChannels) {
  const int height = 8, width = 16, patch = 4;
  PosedImage input{rotated_camera(), Image{width, height, {}}};
  const auto rgb = test::random_values(size_t(width) * height * 3, 3);
  for (float v : rgb) input.image.rgb.push_back(0.5f + 0.1f * v);
  PosedImage target{rotated_camera(), Image{}};
  target.camera.c2w[3] = -4.0;  // another centre
  const std::vector<float> tokens = build_tokens({input, target}, height, width, patch);
  const int cols = width / patch, token_size = patch * patch * 12, per_view = (height / patch) * cols;
  ASSERT_EQ(tokens.size(), size_t(2 * per_view * token_size));
  for (int view = 0; view < 2; ++view) {
    std::vector<float> o, d;
    compute_rays(view ? target.camera : input.camera, height, width, o, d);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        const size_t p = size_t(y) * width + x;
        const float* t = tokens.data() + size_t(view * per_view + (y / patch) * cols + x / patch) * token_size +
                         ((y % patch) * patch + x % patch) * 12;
        for (int c = 0; c < 3; ++c) {
          ASSERT_EQ(t[c], o[p * 3 + c]);
          ASSERT_EQ(t[3 + c], d[p * 3 + c]);
          ASSERT_EQ(t[9 + c], view ? 0.0f : input.image.rgb[p * 3 + c] * 2 - 1);
        }
        // o x d, by components
        ASSERT_NEAR(t[6], o[p * 3 + 1] * d[p * 3 + 2] - o[p * 3 + 2] * d[p * 3 + 1], 1e-6);
        ASSERT_NEAR(t[7], o[p * 3 + 2] * d[p * 3 + 0] - o[p * 3 + 0] * d[p * 3 + 2], 1e-6);
        ASSERT_NEAR(t[8], o[p * 3 + 0] * d[p * 3 + 1] - o[p * 3 + 1] * d[p * 3 + 0], 1e-6);
      }
  }
}

TEST(Tokens, UnpatchifyInvertsTheOrder) {
  const int views = 2, height = 16, width = 24, patch = 8, cols = width / patch;
  const auto patches = test::random_values(size_t(views) * (height / patch) * cols * patch * patch * 3, 4);
  const std::vector<Image> images = unpatchify(patches, views, height, width, patch);
  ASSERT_EQ(images.size(), 2u);
  for (int v = 0; v < views; ++v)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < 3; ++c)
          ASSERT_EQ(images[v].rgb[(size_t(y) * width + x) * 3 + c],
                    patches[size_t(v * (height / patch) * cols + (y / patch) * cols + x / patch) * patch * patch * 3 +
                            ((y % patch) * patch + x % patch) * 3 + c]);
}

TEST(Tokens, SizeNotDivisibleByPatchIsAnError) {
  PosedImage target{rotated_camera(), Image{}};
  EXPECT_THROW(build_tokens({target}, 12, 16, 8), std::runtime_error);
}

}  // namespace
}  // namespace lact
