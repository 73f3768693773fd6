// Metrics against hand-computed values and against scikit-image (tests/data/ssim_fixture.json, made by
// tests/data/make_ssim_fixture.py); camera paths against their formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/camera_geometry.h"
#include "core/error_scale_bar.h"
#include "core/metrics.h"

#ifndef LACT_TEST_DATA_DIR
#define LACT_TEST_DATA_DIR "tests/data"
#endif

namespace lact {
namespace {

Image constant(int w, int h, float v) { return Image{w, h, std::vector<float>(size_t(w) * h * 3, v)}; }

TEST(Metrics, PsnrByHand) {
  // MSE 0.01 -> 20 dB.
  EXPECT_NEAR(psnr(constant(2, 2, 0.3f), constant(2, 2, 0.4f)), 20.0, 1e-5);
  // One channel of one pixel off by 0.5 in a 2x1 image: MSE = 0.25 / 6.
  Image a = constant(2, 1, 0.5f), b = a;
  b.rgb[4] = 1.0f;
  EXPECT_NEAR(psnr(a, b), -10 * std::log10(0.25 / 6), 1e-6);
  // Values are clamped to [0, 1] first: 1.5 counts as 1.
  Image over = constant(2, 2, 1.5f);
  EXPECT_NEAR(psnr(over, constant(2, 2, 0.9f)), 20.0, 1e-5);
  EXPECT_EQ(psnr(a, a), 100.0);
}

TEST(Metrics, SsimMatchesScikitImage) {
  std::ifstream in(std::string(LACT_TEST_DATA_DIR) + "/ssim_fixture.json");
  ASSERT_TRUE(in) << "missing " << LACT_TEST_DATA_DIR << "/ssim_fixture.json";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["cases"].size(), 3u);
  for (const auto& c : fixture["cases"]) {
    const int h = c["height"], w = c["width"];
    const Image a{w, h, c["a"].get<std::vector<float>>()}, b{w, h, c["b"].get<std::vector<float>>()};
    EXPECT_NEAR(ssim(a, b), c["ssim"].get<double>(), 1e-4) << c["kind"];
    EXPECT_NEAR(psnr(a, b), c["psnr"].get<double>(), 1e-4) << c["kind"];
    EXPECT_NEAR(ssim(a, a), 1.0, 1e-9);
  }
}

TEST(CameraPaths, TurntableFollowsTheOfficialFormula) {
  const auto path = turntable_path(120, 64, 48);
  ASSERT_EQ(path.size(), 120u);
  // Frame 0: azimuth 0, phase 0 -> elevation 30 deg, radius 2.35.
  const double r = 2.35, e = 30 * M_PI / 180;
  EXPECT_NEAR(path[0].c2w[3], r * std::cos(e), 1e-9);
  EXPECT_NEAR(path[0].c2w[7], 0.0, 1e-9);
  EXPECT_NEAR(path[0].c2w[11], r * std::sin(e), 1e-9);
  // Frame 30: azimuth 90 deg, phase 2 pi * 30 / 119.
  const double phase = 2 * M_PI * 30 / 119, r30 = 2.35 + 0.65 * std::sin(phase),
               e30 = (30 + 15 * std::sin(phase)) * M_PI / 180;
  EXPECT_NEAR(path[30].c2w[3], 0.0, 1e-9);
  EXPECT_NEAR(path[30].c2w[7], r30 * std::cos(e30), 1e-9);
  EXPECT_NEAR(path[30].c2w[11], r30 * std::sin(e30), 1e-9);
  // Every camera looks at the origin (forward = -position / |position|) with the image up towards +z.
  for (const Camera& c : path) {
    const double n = std::sqrt(c.c2w[3] * c.c2w[3] + c.c2w[7] * c.c2w[7] + c.c2w[11] * c.c2w[11]);
    EXPECT_NEAR(c.c2w[2], -c.c2w[3] / n, 1e-9);
    EXPECT_NEAR(c.c2w[10], -c.c2w[11] / n, 1e-9);
    EXPECT_LT(c.c2w[9], 0.0);  // camera y (down) has a negative world z component
  }
  EXPECT_NEAR(path[0].fx, 64 / (2 * std::tan(25 * M_PI / 180)), 1e-3);
}

TEST(CameraPaths, SlerpInterpolatesRotationsNotMatrices) {
  Camera a = pinhole(32, 32, 50), b = a;
  a.c2w = look_at({2, 0, 0}, {0, 0, 0}, {0, 0, 1});
  b.c2w = look_at({0, 2, 0}, {0, 0, 0}, {0, 0, 1});
  const auto path = interpolate_path({a, b}, 2);
  ASSERT_EQ(path.size(), 3u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(path[0].c2w[i], a.c2w[i], 1e-9);
    EXPECT_NEAR(path[2].c2w[i], b.c2w[i], 1e-9);
  }
  // Halfway: the rotation turned by 45 degrees about z (forward = -(1, 1, 0)/sqrt 2), still orthonormal,
  // while the position is the linear midpoint (1, 1, 0).
  EXPECT_NEAR(path[1].c2w[2], -std::sqrt(0.5), 1e-9);
  EXPECT_NEAR(path[1].c2w[6], -std::sqrt(0.5), 1e-9);
  EXPECT_NEAR(path[1].c2w[3], 1.0, 1e-12);
  EXPECT_NEAR(path[1].c2w[7], 1.0, 1e-12);
  for (int col = 0; col < 3; ++col) {
    double n = 0;
    for (int r = 0; r < 3; ++r) n += path[1].c2w[r * 4 + col] * path[1].c2w[r * 4 + col];
    EXPECT_NEAR(n, 1.0, 1e-12);
  }
}

TEST(CameraPaths, FramesInAllRunFromTheFirstKeyToTheLast) {
  std::vector<Camera> keys(3, pinhole(32, 32, 50));
  keys[0].c2w = look_at({2, 0, 0}, {0, 0, 0}, {0, 0, 1});
  keys[1].c2w = look_at({0, 2, 0}, {0, 0, 0}, {0, 0, 1});
  keys[2].c2w = look_at({-2, 0, 0}, {0, 0, 0}, {0, 0, 1});
  for (int frames : {1, 2, 5, 10, 11}) {
    const auto path = interpolate_path_frames(keys, frames);
    ASSERT_EQ(path.size(), static_cast<size_t>(frames));  // `lact path interpolate --frames 10` wrote 11
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(path.front().c2w[i], keys[0].c2w[i], 1e-12);
    if (frames > 1) {
      for (int i = 0; i < 16; ++i) EXPECT_NEAR(path.back().c2w[i], keys[2].c2w[i], 1e-9);
    }
  }
  // 5 frames through 3 keys: key positions 0, 0.5, 1, 1.5, 2, so the middle frame is the middle key and the
  // second one halfway between the first two (the midpoint of their positions, (1, 1, 0)).
  const auto five = interpolate_path_frames(keys, 5);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(five[2].c2w[i], keys[1].c2w[i], 1e-9);
  EXPECT_NEAR(five[1].c2w[3], 1.0, 1e-12);
  EXPECT_NEAR(five[1].c2w[7], 1.0, 1e-12);
}

TEST(CameraPaths, NearestCameraByViewingDirectionThenPosition) {
  Camera base = pinhole(16, 16, 50);
  std::vector<Camera> cams(3, base);
  cams[0].c2w = look_at({3, 0, 0}, {0, 0, 0}, {0, 0, 1});
  cams[1].c2w = look_at({0, 3, 0}, {0, 0, 0}, {0, 0, 1});
  cams[2].c2w = look_at({0, 3.5, 0}, {0, 0.5, 0}, {0, 0, 1});  // same direction as 1, farther
  Camera target = base;
  target.c2w = look_at({0.3, 2.9, 0.1}, {0, 0, 0}, {0, 0, 1});
  EXPECT_EQ(nearest_camera(cams, target), 1);
  const Vec3 p = look_at_point({cams[0], cams[1]});
  EXPECT_NEAR(p[0], 0, 1e-9);
  EXPECT_NEAR(p[1], 0, 1e-9);
}

}  // namespace
}  // namespace lact

namespace lact {

// The bar under a *_diff.png: the heat map above it unchanged, and each bar column coloured as error_heat_map
// colours a pixel whose mean absolute error is that column's share of the saturation (1 / gain).
TEST(Metrics, ErrorScaleBarShowsTheHeatMapsScale) {
  const int width = 64, height = 8;
  const float gain = 4.0f;
  Image truth{width, height, std::vector<float>(width * height * 3, 0.0f)}, render = truth;
  for (size_t i = 0; i < render.rgb.size(); ++i) render.rgb[i] = static_cast<float>(i % 7) / 9.0f;
  const Image heat = error_heat_map(render, truth, gain);
  const Image shown = with_error_scale_bar(heat, gain);
  ASSERT_EQ(shown.width, width);
  ASSERT_EQ(shown.height, height + kErrorScaleBarRows);
  EXPECT_TRUE(std::equal(heat.rgb.begin(), heat.rgb.end(), shown.rgb.begin()));
  const int bar_row = height + 4;  // inside the gradient
  for (int x : {0, 13, 31, 50, 63}) {
    const float error = static_cast<float>(x) / (width - 1) / gain;
    const Image one = error_heat_map(Image{1, 1, {error, error, error}}, Image{1, 1, {0, 0, 0}}, gain);
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(shown.rgb[(static_cast<size_t>(bar_row) * width + x) * 3 + c], one.rgb[c], 1e-5f) << x << " " << c;
  }
  // Labels: dark pixels on the white rows under the bar, at both ends.
  auto dark_in = [&](int x0, int x1) {
    int n = 0;
    for (int y = height + 11; y < shown.height; ++y)
      for (int x = x0; x < x1; ++x) n += shown.rgb[(static_cast<size_t>(y) * width + x) * 3] < 0.5f;
    return n;
  };
  EXPECT_GT(dark_in(0, 4), 0);               // "0"
  EXPECT_GT(dark_in(width - 16, width), 0);  // "0.25"
  EXPECT_EQ(dark_in(8, 20), 0);              // nothing between "0" and the middle label
}

}  // namespace lact
