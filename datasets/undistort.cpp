#include "datasets/undistort.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "system/error.h"

namespace lact {
namespace {

void check_distortion(const LensDistortion& d, const std::string& where) {
  for (double c : {d.k1, d.k2, d.p1, d.p2, d.k3, d.k4, d.k5, d.k6})
    if (!std::isfinite(c))
      throw Error(where, "distortion coefficients (k1, k2, p1, p2, k3..k6) contain NaN or infinity");
  if (d.fisheye && (d.p1 != 0 || d.p2 != 0 || d.k5 != 0 || d.k6 != 0))
    throw Error(where, "a fisheye lens has k1..k4 only, not p1, p2, k5 or k6");
}

// The fisheye's distorted angle theta_d(theta) = theta (1 + k1 theta^2 + ... + k4 theta^8).
double fisheye_theta_d(const LensDistortion& d, double theta) {
  const double t2 = theta * theta;
  return theta * (1 + t2 * (d.k1 + t2 * (d.k2 + t2 * (d.k3 + t2 * d.k4))));
}

// The fisheye's radial factor theta_d(theta) / r and its derivative with respect to r2, theta = atan(r).
void fisheye_factor(const LensDistortion& d, double r2, double& radial, double& dradial_dr2) {
  const double r = std::sqrt(r2);
  if (r < 1e-8) {  // the limit at the axis: theta_d / r = 1 + (k1 - 1/3) r2 + O(r2^2)
    radial = 1, dradial_dr2 = d.k1 - 1.0 / 3;
    return;
  }
  const double theta = std::atan(r), t2 = theta * theta, theta_d = fisheye_theta_d(d, theta);
  const double dtheta_d = 1 + t2 * (3 * d.k1 + t2 * (5 * d.k2 + t2 * (7 * d.k3 + t2 * 9 * d.k4)));
  radial = theta_d / r;
  const double dradial_dr = (dtheta_d / (1 + r2) * r - theta_d) / r2;
  dradial_dr2 = dradial_dr / (2 * r);
}

// The radial factor and its derivative with respect to r2. Without k3..k6 it is exactly the polynomial
// 1 + k1 r2 + k2 r2^2 (and k1 + 2 k2 r2), as before FULL_OPENCV was read.
void radial_factor(const LensDistortion& d, double r2, double& radial, double& dradial_dr2) {
  if (d.fisheye) return fisheye_factor(d, r2, radial, dradial_dr2);
  if (d.k3 == 0 && d.k4 == 0 && d.k5 == 0 && d.k6 == 0) {
    radial = 1 + d.k1 * r2 + d.k2 * r2 * r2;
    dradial_dr2 = d.k1 + 2 * d.k2 * r2;
    return;
  }
  const double r4 = r2 * r2, r6 = r4 * r2;
  const double numerator = 1 + d.k1 * r2 + d.k2 * r4 + d.k3 * r6;
  const double denominator = 1 + d.k4 * r2 + d.k5 * r4 + d.k6 * r6;
  const double dnumerator = d.k1 + 2 * d.k2 * r2 + 3 * d.k3 * r4;
  const double ddenominator = d.k4 + 2 * d.k5 * r2 + 3 * d.k6 * r4;
  radial = numerator / denominator;
  dradial_dr2 = (dnumerator * denominator - numerator * ddenominator) / (denominator * denominator);
}

void check_camera(const Camera& c, const std::string& which, const std::string& where) {
  if (c.width < 2 || c.height < 2)
    throw Error(where, which + " size " + std::to_string(c.height) + "x" + std::to_string(c.width) +
                           " is too small (at least 2x2)");
  for (float v : {c.fx, c.fy, c.cx, c.cy})
    if (!std::isfinite(v)) throw Error(where, which + " intrinsics contain NaN or infinity");
  if (c.fx <= 0 || c.fy <= 0) throw Error(where, which + " focal lengths must be positive");
}

// The Jacobian of distort_normalized at (x, y): [a b; c e] = d(x_d, y_d) / d(x, y).
void distortion_jacobian(const LensDistortion& d, double x, double y, double& a, double& b, double& c, double& e) {
  const double r2 = x * x + y * y;
  double radial, dradial_dr2;
  radial_factor(d, r2, radial, dradial_dr2);
  const double dradial = 2 * dradial_dr2;  // d radial / d x = dradial * x, likewise y
  a = radial + dradial * x * x + 2 * d.p1 * y + 6 * d.p2 * x;
  b = dradial * x * y + 2 * d.p1 * x + 2 * d.p2 * y;
  c = dradial * x * y + 2 * d.p1 * x + 2 * d.p2 * y;
  e = radial + dradial * y * y + 6 * d.p1 * y + 2 * d.p2 * x;
}

// The normalized undistorted point seen at distorted pixel (u, v); throws if the model cannot be inverted there.
void undistort_pixel(const Camera& c, const LensDistortion& d, double u, double v, double& x, double& y,
                     const std::string& where) {
  if (!undistort_normalized(d, (u - c.cx) / c.fx, (v - c.cy) / c.fy, x, y))
    throw Error(where, "lens distortion cannot be inverted at pixel (" + std::to_string(u) + ", " + std::to_string(v) +
                           "): the coefficients are too strong for this field of view");
}

// Real lenses in these models change the focal length by well under 2x once undistorted (a strong wide angle,
// k1 = -0.35, by about 1.3x). Beyond kMaxMagnification, coefficients such as RADIAL k1 = 1e6 (a unit mistake)
// still invert, but the output would be a few source pixels spread over the whole image: refused.
constexpr double kMaxMagnification = 4;

// A fisheye can be right and still fail it: sides near 90 deg from the axis leave a pinhole view whose centre is
// a few pixels wide.
void check_magnification(const Camera& distorted, const LensDistortion& d, double fx, double fy,
                         const std::string& where) {
  const double mx = fx / distorted.fx, my = fy / distorted.fy;
  for (double m : {mx, my})
    if (!(m <= kMaxMagnification && m >= 1 / kMaxMagnification)) {
      char why[120], text[400];
      std::snprintf(why, sizeof why, "real lenses stay within %g times: the coefficients are implausible",
                    kMaxMagnification);
      std::snprintf(text, sizeof text,
                    "lens distortion changes the focal length %.3g times when undistorted (fx %.4g -> %.4g, fy %.4g "
                    "-> %.4g; %s)",
                    m, distorted.fx, fx, distorted.fy, fy,
                    d.fisheye ? "the fisheye's view is too wide for one pinhole view: crop the images to a narrower "
                                "view first"
                              : why);
      throw Error(where, text);
    }
}

}  // namespace

bool LensDistortion::any() const {
  return fisheye || k1 != 0 || k2 != 0 || p1 != 0 || p2 != 0 || k3 != 0 || k4 != 0 || k5 != 0 || k6 != 0;
}

bool operator==(const LensDistortion& a, const LensDistortion& b) {
  return a.fisheye == b.fisheye && a.k1 == b.k1 && a.k2 == b.k2 && a.p1 == b.p1 && a.p2 == b.p2 && a.k3 == b.k3 &&
         a.k4 == b.k4 && a.k5 == b.k5 && a.k6 == b.k6;
}

void distort_normalized(const LensDistortion& d, double x, double y, double& xd, double& yd) {
  const double r2 = x * x + y * y;
  double radial, unused;
  radial_factor(d, r2, radial, unused);
  xd = x * radial + 2 * d.p1 * x * y + d.p2 * (r2 + 2 * x * x);
  yd = y * radial + d.p1 * (r2 + 2 * y * y) + 2 * d.p2 * x * y;
}

bool undistort_normalized(const LensDistortion& d, double xd, double yd, double& x, double& y) {
  x = xd, y = yd;
  if (!std::isfinite(xd) || !std::isfinite(yd)) return false;
  // Residual target scales with the point so that wide fields of view are not held to an unreachable bound.
  const double tolerance = 1e-13 * std::max(1.0, std::hypot(xd, yd));
  auto residual = [&](double px, double py, double& rx, double& ry) {
    distort_normalized(d, px, py, rx, ry);
    rx -= xd, ry -= yd;
    return std::hypot(rx, ry);
  };
  double rx, ry;
  double norm = residual(x, y, rx, ry);
  for (int iteration = 0; iteration < 100 && norm > tolerance; ++iteration) {
    double a, b, c, e;
    distortion_jacobian(d, x, y, a, b, c, e);
    const double det = a * e - b * c;
    if (!std::isfinite(det) || det == 0) return false;
    const double sx = (e * rx - b * ry) / det, sy = (a * ry - c * rx) / det;
    // Newton step, halved until the residual shrinks: plain Newton can overshoot where the radial term bends.
    bool improved = false;
    for (double t = 1; t > 1e-9 && !improved; t *= 0.5) {
      double nrx, nry;
      const double nx = x - t * sx, ny = y - t * sy;
      const double next = residual(nx, ny, nrx, nry);
      if (std::isfinite(next) && next < norm) x = nx, y = ny, rx = nrx, ry = nry, norm = next, improved = true;
    }
    if (!improved) break;  // at a floor or a fold of the model
  }
  return norm <= tolerance;
}

Camera undistorted_camera(const Camera& distorted, const LensDistortion& d, const std::string& where) {
  check_camera(distorted, "distorted camera", where);
  check_distortion(d, where);
  // OpenCV's inscribed rectangle: 9 samples per side of the distorted image, undistorted; the rectangle's left
  // edge is the rightmost left-side sample, and so on. As in OpenCV, the samples run from 0 to W (not W-1: the
  // right and bottom ones sit one pixel past the last pixel centre) while the rectangle is scaled onto 0 .. W-1.
  // Kept so that K' matches the official converter's; the cost is that the outermost right / bottom output
  // pixels may sample up to about a pixel past the last source pixel (clamped to the edge in undistort_image).
  // Also as in OpenCV, the true boundary can bulge inward between samples (barrel distortion, principal point
  // off centre), by a small fraction of a pixel.
  const int samples = 9;
  const double w = distorted.width, h = distorted.height;
  const double inf = std::numeric_limits<double>::infinity();
  double x0 = -inf, x1 = inf, y0 = -inf, y1 = inf;
  // A fisheye's sample 90 deg or more from the axis is at infinity, outwards: it bounds nothing, and is skipped.
  const double beyond = d.fisheye ? fisheye_theta_d(d, std::acos(-1.0) / 2) : inf;
  auto sample = [&](double u, double v, double& bound, bool upper, bool along_x) {
    if (std::hypot((u - distorted.cx) / distorted.fx, (v - distorted.cy) / distorted.fy) >= beyond) return;
    double x, y;
    undistort_pixel(distorted, d, u, v, x, y, where);
    const double value = along_x ? x : y;
    bound = upper ? std::min(bound, value) : std::max(bound, value);
  };
  for (int i = 0; i < samples; ++i) {
    const double u = i * w / (samples - 1), v = i * h / (samples - 1);
    sample(0, v, x0, false, true), sample(w, v, x1, true, true);
    sample(u, 0, y0, false, false), sample(u, h, y1, true, false);
  }
  if (!std::isfinite(x0) || !std::isfinite(x1) || !std::isfinite(y0) || !std::isfinite(y1))
    throw Error(where,
                "the fisheye's view reaches 90 deg from its axis along a whole side of the image: no pinhole view "
                "holds it (crop the images to a narrower view first)");
  if (!(x1 > x0 && y1 > y0)) throw Error(where, "lens distortion leaves no valid rectangle inside the image");
  Camera pinhole = distorted;
  const double fx = (w - 1) / (x1 - x0), fy = (h - 1) / (y1 - y0);
  check_magnification(distorted, d, fx, fy, where);
  // Checked in double first: a nearly empty rectangle gives a focal length no float holds.
  set_intrinsics(pinhole, fx, fy, -fx * x0, -fy * y0, where + " (undistorted)");
  return pinhole;
}

std::vector<float> undistort_image(const std::vector<float>& pixels, int channels, const Camera& distorted,
                                   const LensDistortion& d, const Camera& pinhole) {
  const std::string kWhere = "undistort";  // (the caller checked the camera it read: these are internal)
  check_camera(distorted, "distorted camera", kWhere);
  check_camera(pinhole, "pinhole camera", kWhere);
  check_distortion(d, kWhere);
  if (channels <= 0) throw Error(kWhere, "channel count must be positive, got " + std::to_string(channels));
  const int width = distorted.width, height = distorted.height;
  if (pinhole.width != width || pinhole.height != height)
    throw Error(kWhere, "pinhole camera size " + std::to_string(pinhole.height) + "x" + std::to_string(pinhole.width) +
                            " differs from the distorted image's " + std::to_string(height) + "x" +
                            std::to_string(width));
  const size_t expected = size_t(width) * height * channels;
  if (pixels.size() != expected)
    throw Error(kWhere, "image has " + std::to_string(pixels.size()) + " values, expected " + std::to_string(expected) +
                            " (" + std::to_string(height) + "x" + std::to_string(width) + "x" +
                            std::to_string(channels) + ")");

  std::vector<float> out(expected);
  for (int v = 0; v < height; ++v) {
    for (int u = 0; u < width; ++u) {
      double xd, yd;
      distort_normalized(d, (u - pinhole.cx) / double(pinhole.fx), (v - pinhole.cy) / double(pinhole.fy), xd, yd);
      double sx = distorted.fx * xd + distorted.cx, sy = distorted.fy * yd + distorted.cy;
      // Clamp-to-edge: a clamped coordinate samples exactly what a replicated border would give.
      sx = std::isfinite(sx) ? std::min(std::max(sx, 0.0), double(width - 1)) : 0.0;
      sy = std::isfinite(sy) ? std::min(std::max(sy, 0.0), double(height - 1)) : 0.0;
      const int ix = std::min(int(sx), width - 2), iy = std::min(int(sy), height - 2);
      const double tx = sx - ix, ty = sy - iy;
      const float* p00 = &pixels[(size_t(iy) * width + ix) * channels];
      const float* p01 = p00 + channels;
      const float* p10 = p00 + size_t(width) * channels;
      const float* p11 = p10 + channels;
      float* o = &out[(size_t(v) * width + u) * channels];
      for (int ch = 0; ch < channels; ++ch) {
        const double top = p00[ch] + tx * (p01[ch] - p00[ch]);
        const double bottom = p10[ch] + tx * (p11[ch] - p10[ch]);
        o[ch] = float(top + ty * (bottom - top));
      }
    }
  }
  return out;
}

}  // namespace lact
