// Lens undistortion against the model itself: the inverse round-trips, a rendered grid of straight lines comes
// out straight, the alpha = 0 crop keeps only valid pixels and is tight, K' agrees with OpenCV's, and bad input
// is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "datasets/undistort.h"
#include "system/error.h"

namespace lact {
namespace {

Camera make_camera(int width, int height, float fx, float fy, float cx, float cy) {
  Camera c;
  c.width = width, c.height = height, c.fx = fx, c.fy = fy, c.cx = cx, c.cy = cy;
  c.c2w = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  return c;
}

// A DL3DV-like camera: barrel distortion, a little tangential, principal point off the image centre.
Camera realistic_camera() { return make_camera(640, 480, 500.0f, 505.0f, 322.7f, 236.4f); }
LensDistortion realistic_distortion() { return {-0.28, 0.07, 1e-3, -5e-4}; }

// Distorted pixel -> pixel of the pinhole camera `k` (the inverse of what undistort_image samples).
void distorted_to_pinhole(const Camera& distorted, const LensDistortion& d, const Camera& k, double u, double v,
                          double& px, double& py) {
  double x, y;
  ASSERT_TRUE(undistort_normalized(d, (u - distorted.cx) / distorted.fx, (v - distorted.cy) / distorted.fy, x, y));
  px = k.fx * x + k.cx, py = k.fy * y + k.cy;
}

// Pinhole pixel -> distorted pixel (the mapping undistort_image samples along).
void pinhole_to_distorted(const Camera& k, const LensDistortion& d, const Camera& distorted, double px, double py,
                          double& u, double& v) {
  double xd, yd;
  distort_normalized(d, (px - k.cx) / k.fx, (py - k.cy) / k.fy, xd, yd);
  u = distorted.fx * xd + distorted.cx, v = distorted.fy * yd + distorted.cy;
}

// Least-squares line a + b t through (t_i, s_i); returns the largest perpendicular distance and the RMS.
void line_residuals(const std::vector<double>& t, const std::vector<double>& s, double& max_residual, double& rms) {
  const double n = double(t.size());
  double st = 0, ss = 0, stt = 0, sts = 0;
  for (size_t i = 0; i < t.size(); ++i) st += t[i], ss += s[i], stt += t[i] * t[i], sts += t[i] * s[i];
  const double b = (n * sts - st * ss) / (n * stt - st * st), a = (ss - b * st) / n;
  max_residual = 0, rms = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const double r = std::abs(s[i] - a - b * t[i]) / std::sqrt(1 + b * b);
    max_residual = std::max(max_residual, r), rms += r * r;
  }
  rms = std::sqrt(rms / n);
}

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no lact::Error thrown)";
}

TEST(Undistort, RoundTripIsExact) {
  const Camera cam = realistic_camera();
  const LensDistortion d = realistic_distortion();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> uu(0, cam.width - 1), vv(0, cam.height - 1);
  double worst = 0;
  for (int i = 0; i < 20000; ++i) {
    // Distorted pixel -> undistorted -> distorted again.
    const double xd = (uu(rng) - cam.cx) / cam.fx, yd = (vv(rng) - cam.cy) / cam.fy;
    double x, y, xd2, yd2;
    ASSERT_TRUE(undistort_normalized(d, xd, yd, x, y));
    distort_normalized(d, x, y, xd2, yd2);
    worst = std::max(worst, std::max(std::abs(xd2 - xd), std::abs(yd2 - yd)));
    // Undistorted point (the same range) -> distorted -> undistorted again.
    double x3, y3;
    distort_normalized(d, xd, yd, x, y);
    ASSERT_TRUE(undistort_normalized(d, x, y, x3, y3));
    worst = std::max(worst, std::max(std::abs(x3 - xd), std::abs(y3 - yd)));
  }
  std::printf("round trip: worst normalized error %.3g\n", worst);
  EXPECT_LT(worst, 1e-9);
  // No distortion: the identity.
  double x, y;
  ASSERT_TRUE(undistort_normalized(LensDistortion{}, 0.3, -0.2, x, y));
  EXPECT_EQ(x, 0.3);
  EXPECT_EQ(y, -0.2);
}

// The acceptance test. A grid of straight lines as the pinhole camera K' would see it is rendered into the
// distorted image (channel 0: vertical lines, channel 1: horizontal ones, Gaussian profiles), undistorted onto K',
// and each line's intensity centroid per row (column) must lie on a straight line, at the drawn position.
void expect_grid_comes_out_straight(const Camera& cam, const LensDistortion& d) {
  const Camera k = undistorted_camera(cam, d);
  const int width = cam.width, height = cam.height;
  const double sigma = 2.0;
  std::vector<double> columns, rows;  // line positions in K' pixels, at assorted sub-pixel phases
  for (int i = 0; 30 + 70 * i + 0.37 * i < width - 30; ++i) columns.push_back(30 + 70 * i + 0.37 * i);
  for (int i = 0; 30 + 70 * i + 0.29 * i < height - 30; ++i) rows.push_back(30 + 70 * i + 0.29 * i);

  std::vector<float> image(size_t(width) * height * 2);
  for (int v = 0; v < height; ++v)
    for (int u = 0; u < width; ++u) {
      double px, py;
      distorted_to_pinhole(cam, d, k, u, v, px, py);
      double vertical = 0, horizontal = 0;
      for (double c : columns) vertical += std::exp(-(px - c) * (px - c) / (2 * sigma * sigma));
      for (double r : rows) horizontal += std::exp(-(py - r) * (py - r) / (2 * sigma * sigma));
      image[(size_t(v) * width + u) * 2 + 0] = float(vertical);
      image[(size_t(v) * width + u) * 2 + 1] = float(horizontal);
    }

  // Centroid of the line near `centre` along the pixels at(i), i in a window of +-10 (5 sigma).
  auto centroid = [&](const std::vector<float>& img, int channel, double centre, int along, bool vertical) {
    double sum = 0, moment = 0;
    for (int i = int(std::lround(centre)) - 10; i <= int(std::lround(centre)) + 10; ++i) {
      const size_t index = vertical ? size_t(along) * width + i : size_t(i) * width + along;
      const double w = img[index * 2 + channel];
      sum += w, moment += w * i;
    }
    return moment / sum;
  };
  // Fits every line in `img`; `expected` says where each line is, per row (column), for the locating window.
  auto measure = [&](const std::vector<float>& img, auto expected, double& worst, double& rms, double& offset) {
    worst = 0, offset = 0;
    double sum_squares = 0;
    int count = 0;
    for (int vertical = 1; vertical >= 0; --vertical) {
      const auto& lines = vertical ? columns : rows;
      const int extent = vertical ? height : width;
      for (double line : lines) {
        std::vector<double> t, s;
        for (int along = 10; along < extent - 10; ++along) {
          const double found = centroid(img, vertical ? 0 : 1, expected(vertical, line, along), along, vertical);
          t.push_back(along), s.push_back(found);
          offset = std::max(offset, std::abs(found - line));
        }
        double line_worst, line_rms;
        line_residuals(t, s, line_worst, line_rms);
        worst = std::max(worst, line_worst), sum_squares += line_rms * line_rms, ++count;
      }
    }
    rms = std::sqrt(sum_squares / count);
  };

  // The distorted input itself is far from straight: the test has teeth.
  double worst, rms, offset;
  measure(
      image,
      [&](bool vertical, double line, int along) {
        double u, v;  // where the line crosses this row (column) of the distorted image, near enough
        vertical ? pinhole_to_distorted(k, d, cam, line, along, u, v)
                 : pinhole_to_distorted(k, d, cam, along, line, u, v);
        return vertical ? u : v;
      },
      worst, rms, offset);
  std::printf("distorted input: worst straightness residual %.3f px\n", worst);
  EXPECT_GT(worst, 5.0);

  const std::vector<float> out = undistort_image(image, 2, cam, d, k);
  measure(
      out, [](bool, double line, int) { return line; }, worst, rms, offset);
  std::printf("undistorted grid: straightness residual max %.4f px, RMS %.4f px; max offset from drawn %.4f px\n",
              worst, rms, offset);
  EXPECT_LT(worst, 0.05);
  EXPECT_LT(rms, 0.05);
  EXPECT_LT(offset, 0.05);
}

TEST(Undistort, DistortedGridComesOutStraight) {
  expect_grid_comes_out_straight(realistic_camera(), realistic_distortion());
}

// A wide fisheye (OpenCV's / COLMAP's OPENCV_FISHEYE): 640x480 at f 300, 76 deg from the axis at the corners.
Camera fisheye_camera() { return make_camera(640, 480, 300.0f, 301.0f, 321.4f, 238.2f); }
LensDistortion fisheye_distortion() {
  LensDistortion d;
  d.fisheye = true, d.k1 = 0.021, d.k2 = -0.0052, d.k3 = 0.0011, d.k4 = -0.00021;
  return d;
}

TEST(Undistort, FisheyeGridComesOutStraight) { expect_grid_comes_out_straight(fisheye_camera(), fisheye_distortion()); }

// Point-based: a coordinate ramp (each pixel holds its own position; bilinear sampling reproduces a ramp exactly)
// reveals the source position undistort_image used for every output pixel. Undistorting that position must land
// back on the output pixel, so points along any straight line in K' stay on it.
TEST(Undistort, SamplingPositionsInvertTheDistortion) {
  const Camera cam = realistic_camera();
  const LensDistortion d = realistic_distortion();
  const Camera k = undistorted_camera(cam, d);
  const int width = cam.width, height = cam.height;
  std::vector<float> ramp(size_t(width) * height * 2);
  for (int v = 0; v < height; ++v)
    for (int u = 0; u < width; ++u) {
      ramp[(size_t(v) * width + u) * 2 + 0] = float(u);
      ramp[(size_t(v) * width + u) * 2 + 1] = float(v);
    }
  const std::vector<float> source = undistort_image(ramp, 2, cam, d, k);

  double worst = 0;
  int clamped = 0;
  for (int v = 0; v < height; ++v)
    for (int u = 0; u < width; ++u) {
      double su, sv, px, py;
      pinhole_to_distorted(k, d, cam, u, v, su, sv);
      // OpenCV's crop lets a few right / bottom border pixels sample just past the last pixel centre, where
      // clamping (rightly) stops the ramp; those are checked in BarrelCropKeepsOnlyValidPixelsAndIsTight.
      if (su < 0 || sv < 0 || su > width - 1 || sv > height - 1) {
        ++clamped;
        continue;
      }
      const size_t i = (size_t(v) * width + u) * 2;
      distorted_to_pinhole(cam, d, k, source[i], source[i + 1], px, py);
      worst = std::max(worst, std::hypot(px - u, py - v));
    }
  std::printf("sampling positions: worst return error %.2g px (%d border pixels clamped)\n", worst, clamped);
  EXPECT_LT(worst, 0.05);
  EXPECT_LT(clamped, width + height);

  // Analytic points on straight lines of K' (columns, rows, a diagonal): out through the distortion (curved
  // there), back through the inverse, straight again.
  double worst_line = 0, worst_curve = 0;
  for (int line = 0; line < 3; ++line) {
    std::vector<double> t, s, curve_t, curve_s;
    for (int i = 0; i <= 100; ++i) {
      const double a = i / 100.0;
      // line 0: the column x = 20.25; 1: the row y = 15.75; 2: the diagonal.
      const double px = line == 0 ? 20.25 : a * (width - 1);
      const double py = line == 1 ? 15.75 : a * (height - 1);
      double u, v, bx, by;
      pinhole_to_distorted(k, d, cam, px, py, u, v);
      distorted_to_pinhole(cam, d, k, u, v, bx, by);
      const bool by_row = line == 0;  // fit x(y) for the near-vertical line
      t.push_back(by_row ? by : bx), s.push_back(by_row ? bx : by);
      curve_t.push_back(by_row ? v : u), curve_s.push_back(by_row ? u : v);
    }
    double m, r;
    line_residuals(t, s, m, r);
    worst_line = std::max(worst_line, m);
    line_residuals(curve_t, curve_s, m, r);
    worst_curve = std::max(worst_curve, m);
  }
  std::printf("points on lines: residual %.2g px after the round trip, %.2f px in the distorted image\n", worst_line,
              worst_curve);
  EXPECT_LT(worst_line, 0.05);
  EXPECT_GT(worst_curve, 1.0);
}

// OpenCV samples the image border from 0 to W but scales onto 0 .. W-1, so even without distortion its alpha = 0
// camera is K scaled by (W-1)/W (x) and (H-1)/H (y); undistorted_camera keeps that, for the official converter's K'.
// Resampling onto the distorted camera itself is the identity.
// The fisheye model against its definition computed by hand: r = |(x, y)|, theta = atan(r),
// theta_d = theta (1 + k1 theta^2 + k2 theta^4 + k3 theta^6 + k4 theta^8), (x_d, y_d) = (x, y) theta_d / r.
TEST(Undistort, FisheyeFollowsTheAngleFormula) {
  LensDistortion equidistant;
  equidistant.fisheye = true;  // all k zero: the distorted radius is the angle itself
  double xd, yd;
  distort_normalized(equidistant, 1.0, 0.0, xd, yd);  // 45 deg
  EXPECT_NEAR(xd, 0.78539816339744831, 1e-15);
  EXPECT_EQ(yd, 0.0);
  distort_normalized(equidistant, 0.0, -std::sqrt(3.0), xd, yd);  // 60 deg
  EXPECT_NEAR(yd, -1.0471975511965976, 1e-15);
  // (0.3, 0.4): r 0.5, theta 0.46364760900080612, theta^2 0.21496910533...; with k1 = 0.1, k2 = -0.02:
  // theta_d = 0.46364760900 (1 + 0.021496911 - 0.000924234) = 0.47318608...
  LensDistortion d;
  d.fisheye = true, d.k1 = 0.1, d.k2 = -0.02;
  distort_normalized(d, 0.3, 0.4, xd, yd);
  const double theta = 0.46364760900080612, t2 = theta * theta;
  const double theta_d = theta * (1 + 0.1 * t2 - 0.02 * t2 * t2);
  EXPECT_NEAR(theta_d, 0.47318608, 1e-8);
  EXPECT_NEAR(xd, 0.3 * theta_d / 0.5, 1e-15);
  EXPECT_NEAR(yd, 0.4 * theta_d / 0.5, 1e-15);
  distort_normalized(d, 0.0, 0.0, xd, yd);  // the axis itself
  EXPECT_EQ(xd, 0.0);
  EXPECT_EQ(yd, 0.0);
  // And back, to the model's own precision, across the whole image out to 80 deg.
  const LensDistortion wide = fisheye_distortion();
  double worst = 0;
  for (double angle = 0; angle < 6.28; angle += 0.05)
    for (double r = 0; r < std::tan(80 * 3.14159265358979 / 180); r += 0.07) {
      double x, y;
      distort_normalized(wide, r * std::cos(angle), r * std::sin(angle), xd, yd);
      ASSERT_TRUE(undistort_normalized(wide, xd, yd, x, y)) << r << " " << angle;
      worst = std::max({worst, std::abs(x - r * std::cos(angle)) / std::max(1.0, r),
                        std::abs(y - r * std::sin(angle)) / std::max(1.0, r)});
    }
  EXPECT_LT(worst, 1e-9);
}

TEST(Undistort, NoDistortion) {
  const Camera cam = realistic_camera();
  const Camera k = undistorted_camera(cam, LensDistortion{});
  const double sx = (cam.width - 1.0) / cam.width, sy = (cam.height - 1.0) / cam.height;
  EXPECT_NEAR(k.fx, cam.fx * sx, 1e-4);
  EXPECT_NEAR(k.fy, cam.fy * sy, 1e-4);
  EXPECT_NEAR(k.cx, cam.cx * sx, 1e-4);
  EXPECT_NEAR(k.cy, cam.cy * sy, 1e-4);
  EXPECT_EQ(k.width, cam.width);
  EXPECT_EQ(k.c2w, cam.c2w);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(0, 1);
  std::vector<float> image(size_t(cam.width) * cam.height * 3);
  for (float& x : image) x = value(rng);
  const std::vector<float> out = undistort_image(image, 3, cam, LensDistortion{}, cam);
  float worst = 0;
  for (size_t i = 0; i < image.size(); ++i) worst = std::max(worst, std::abs(out[i] - image[i]));
  EXPECT_LT(worst, 1e-6f);
}

// How far (px) the sources of the output image fall outside [0, W] x [0, H] (the pixel centres 0 .. W-1 plus
// OpenCV's one-pixel overshoot on the right and bottom), and how close those of each output border come to the
// matching bound: left 0, right W, top 0, bottom H.
void crop_extent(const Camera& cam, const LensDistortion& d, double& outside, double gap[4]) {
  const Camera k = undistorted_camera(cam, d);
  const double w = cam.width, h = cam.height;
  outside = 0;
  for (int i = 0; i < 4; ++i) gap[i] = 1e9;
  for (int v = 0; v < cam.height; ++v)
    for (int u = 0; u < cam.width; ++u) {
      double su, sv;
      pinhole_to_distorted(k, d, cam, u, v, su, sv);
      outside = std::max({outside, -su, su - w, -sv, sv - h});
      if (u == 0) gap[0] = std::min(gap[0], su);
      if (u == cam.width - 1) gap[1] = std::min(gap[1], w - su);
      if (v == 0) gap[2] = std::min(gap[2], sv);
      if (v == cam.height - 1) gap[3] = std::min(gap[3], h - sv);
    }
}

TEST(Undistort, BarrelCropKeepsOnlyValidPixelsAndIsTight) {
  // Principal point at the image centre, radial only: the boundary's innermost points are among the 9 samples
  // per side, so nothing at all falls outside.
  double outside, gap[4];
  crop_extent(make_camera(640, 480, 500, 500, 319.5f, 239.5f), {-0.28, 0.07, 0, 0}, outside, gap);
  std::printf("centred barrel: outside %.2g px, border gaps %.3g %.3g %.3g %.3g px\n", outside, gap[0], gap[1], gap[2],
              gap[3]);
  EXPECT_LT(outside, 1e-3);
  for (double g : gap) EXPECT_LT(g, 1.0);

  // Off-centre principal point and tangential terms: the innermost boundary point falls between samples, so (as
  // with OpenCV) the outermost output pixels may reach a sliver of a pixel further.
  crop_extent(realistic_camera(), realistic_distortion(), outside, gap);
  std::printf("realistic barrel: outside %.2g px, border gaps %.3g %.3g %.3g %.3g px\n", outside, gap[0], gap[1],
              gap[2], gap[3]);
  EXPECT_LT(outside, 0.01);
  for (double g : gap) EXPECT_LT(g, 1.0);
}

// Corners past 90 deg (no pinhole view holds them) are left out of the inscribed rectangle, which the side
// midpoints bound; sides past 90 deg are refused.
TEST(Undistort, FisheyeCornersPast90DegreesAreLeftOut) {
  LensDistortion equidistant;
  equidistant.fisheye = true;
  const Camera wide = make_camera(640, 480, 246, 246, 320, 240);  // corners at 93 deg, sides at 75 and 56 deg
  const Camera k = undistorted_camera(wide, equidistant);
  // The rectangle's left edge is the undistorted left midpoint: x = -tan(320 / 246) (angle = distorted radius).
  EXPECT_NEAR(-k.cx / k.fx, -std::tan(320.0 / 246), 1e-4);
  EXPECT_NEAR(-k.cy / k.fy, -std::tan(240.0 / 246), 1e-4);
  double outside, gap[4];
  crop_extent(wide, equidistant, outside, gap);
  EXPECT_LT(outside, 1e-3);
  for (double g : gap) EXPECT_LT(g, 1.0);
  const std::string refused =
      error_message([&] { undistorted_camera(make_camera(640, 480, 180, 180, 320, 240), equidistant); });
  EXPECT_NE(refused.find("reaches 90 deg from its axis along a whole side"), std::string::npos) << refused;
  // Sides within 90 deg but so wide that the pinhole view's focal length is a sliver of the fisheye's.
  const std::string too_wide =
      error_message([&] { undistorted_camera(make_camera(640, 480, 220, 220, 320, 240), equidistant); });
  EXPECT_NE(too_wide.find("too wide for one pinhole view"), std::string::npos) << too_wide;
  LensDistortion tangential = equidistant;
  tangential.p1 = 1e-3;
  EXPECT_NE(error_message([&] { undistorted_camera(wide, tangential); }).find("k1..k4 only"), std::string::npos);
}

// K' from OpenCV 4.6's getOptimalNewCameraMatrix(K, dist, size, 0, size). It stops undistorting the border
// samples after 5 fixed-point steps; this converges, hence the small differences (larger with strong distortion).
TEST(Undistort, MatchesOpenCVOptimalNewCameraMatrix) {
  struct Case {
    Camera camera;
    LensDistortion d;
    float fx, fy, cx, cy;
  };
  const Case cases[] = {
      {realistic_camera(), realistic_distortion(), 433.6928f, 469.6408f, 322.5713f, 235.7974f},
      {make_camera(960, 540, 535.2f, 537.9f, 481.3f, 268.1f),
       {-0.12, 0.03, 4e-4, 2e-4},
       487.5984f,
       520.8085f,
       481.3522f,
       267.6711f},
      {make_camera(960, 540, 535.2f, 537.9f, 470.3f, 280.1f),
       {0.1, -0.02, -1e-3, 1e-3},
       575.5929f,
       578.7328f,
       471.6463f,
       278.6526f},
      {make_camera(3840, 2160, 2140, 2150, 1925, 1072),
       {-0.35, 0.12, 2e-3, -1e-3},
       1632.2048f,
       1941.1560f,
       1916.2718f,
       1074.5539f},
  };
  for (const Case& c : cases) {
    const Camera k = undistorted_camera(c.camera, c.d);
    const double tolerance = c.camera.width > 1000 ? 0.15 : 0.07;
    EXPECT_NEAR(k.fx, c.fx, tolerance);
    EXPECT_NEAR(k.fy, c.fy, tolerance);
    EXPECT_NEAR(k.cx, c.cx, tolerance);
    EXPECT_NEAR(k.cy, c.cy, tolerance);
  }
}

TEST(Undistort, BadInputThrows) {
  const Camera cam = realistic_camera();
  const LensDistortion d = realistic_distortion();
  const std::vector<float> image(size_t(cam.width) * cam.height * 3, 0.5f);
  LensDistortion nan = d;
  nan.k2 = std::nan("");
  EXPECT_NE(error_message([&] { undistorted_camera(cam, nan); }).find("NaN"), std::string::npos);
  EXPECT_NE(error_message([&] { undistort_image(image, 3, cam, nan, cam); }).find("NaN"), std::string::npos);
  Camera flat = cam;
  flat.fx = 0;
  EXPECT_NE(error_message([&] { undistorted_camera(flat, d); }).find("focal"), std::string::npos);
  EXPECT_NE(error_message([&] { undistort_image(image, 3, cam, d, flat); }).find("focal"), std::string::npos);
  flat.fx = cam.fx, flat.fy = -1;
  EXPECT_NE(error_message([&] { undistort_image(image, 3, flat, d, cam); }).find("focal"), std::string::npos);
  Camera odd = cam;
  odd.cx = std::nanf("");
  EXPECT_NE(error_message([&] { undistorted_camera(odd, d); }).find("NaN"), std::string::npos);
  EXPECT_NE(error_message([&] { undistort_image(image, 2, cam, d, cam); }).find("expected"), std::string::npos);
  EXPECT_NE(error_message([&] { undistort_image(image, 0, cam, d, cam); }).find("channel"), std::string::npos);
  Camera smaller = cam;
  smaller.width = 320;
  EXPECT_NE(error_message([&] { undistort_image(image, 3, cam, d, smaller); }).find("differs"), std::string::npos);
  // So strong that r (1 - r^2) never reaches the image corners: no inverse there.
  EXPECT_NE(error_message([&] {
              undistorted_camera(cam, {-1.0, 0, 0, 0});
            }).find("cannot be inverted"),
            std::string::npos);
  double x, y;
  EXPECT_FALSE(undistort_normalized({-1.0, 0, 0, 0}, 0.6, 0.0, x, y));
  EXPECT_FALSE(undistort_normalized(d, std::nan(""), 0.0, x, y));
}

}  // namespace
}  // namespace lact
