#include "core/metrics.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "system/error.h"

namespace lact {

namespace {

void require_same_size(const Image& a, const Image& b) {
  if (a.width != b.width || a.height != b.height || a.rgb.size() != b.rgb.size())
    throw Error("metrics: images of different sizes (" + std::to_string(a.height) + "x" + std::to_string(a.width) +
                " vs " + std::to_string(b.height) + "x" + std::to_string(b.width) + ")");
}

float clamp01(float v) { return std::clamp(v, 0.0f, 1.0f); }

// scipy.ndimage 'reflect' (half-sample symmetric: d c b a | a b c d | d c b a).
int reflect(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
  return i;
}

// Separable Gaussian filter (sigma 1.5, radius 5) of one channel plane.
std::vector<double> gaussian_filter(const std::vector<double>& plane, int width, int height) {
  constexpr int kRadius = 5;
  double weights[2 * kRadius + 1], total = 0;
  for (int i = -kRadius; i <= kRadius; ++i) total += weights[i + kRadius] = std::exp(-0.5 * i * i / (1.5 * 1.5));
  for (double& w : weights) w /= total;
  std::vector<double> rows(plane.size()), out(plane.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double s = 0;
      for (int k = -kRadius; k <= kRadius; ++k) s += weights[k + kRadius] * plane[y * width + reflect(x + k, width)];
      rows[y * width + x] = s;
    }
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double s = 0;
      for (int k = -kRadius; k <= kRadius; ++k) s += weights[k + kRadius] * rows[reflect(y + k, height) * width + x];
      out[y * width + x] = s;
    }
  return out;
}

}  // namespace

double mean_squared_error(const Image& a, const Image& b) {
  require_same_size(a, b);
  double sum = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) {
    const double d = clamp01(a.rgb[i]) - clamp01(b.rgb[i]);
    sum += d * d;
  }
  return a.rgb.empty() ? 0.0 : sum / static_cast<double>(a.rgb.size());
}

double psnr_from_mse(double mse) { return mse <= 1e-10 ? 100.0 : -10.0 * std::log10(mse); }

double psnr(const Image& a, const Image& b) { return psnr_from_mse(mean_squared_error(a, b)); }

double ssim(const Image& a, const Image& b) {
  require_same_size(a, b);
  const int w = a.width, h = a.height;
  constexpr int kPad = kSsimSmallestSide / 2;
  if (w <= 2 * kPad || h <= 2 * kPad) throw Error("ssim: images must be larger than 10x10");
  constexpr double kC1 = 0.01 * 0.01, kC2 = 0.03 * 0.03;
  constexpr double kCovarianceNorm = 121.0 / 120.0;
  const size_t n = static_cast<size_t>(w) * h;
  double total = 0;
  for (int c = 0; c < 3; ++c) {
    std::vector<double> x(n), y(n), xx(n), yy(n), xy(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = clamp01(a.rgb[i * 3 + c]);
      y[i] = clamp01(b.rgb[i * 3 + c]);
      xx[i] = x[i] * x[i], yy[i] = y[i] * y[i], xy[i] = x[i] * y[i];
    }
    const auto ux = gaussian_filter(x, w, h), uy = gaussian_filter(y, w, h);
    const auto uxx = gaussian_filter(xx, w, h), uyy = gaussian_filter(yy, w, h), uxy = gaussian_filter(xy, w, h);
    double sum = 0;
    for (int row = kPad; row < h - kPad; ++row)
      for (int col = kPad; col < w - kPad; ++col) {
        const size_t i = static_cast<size_t>(row) * w + col;
        const double vx = kCovarianceNorm * (uxx[i] - ux[i] * ux[i]);
        const double vy = kCovarianceNorm * (uyy[i] - uy[i] * uy[i]);
        const double vxy = kCovarianceNorm * (uxy[i] - ux[i] * uy[i]);
        sum +=
            ((2 * ux[i] * uy[i] + kC1) * (2 * vxy + kC2)) / ((ux[i] * ux[i] + uy[i] * uy[i] + kC1) * (vx + vy + kC2));
      }
    total += sum / (static_cast<double>(w - 2 * kPad) * (h - 2 * kPad));
  }
  return total / 3.0;
}

Image error_heat_map(const Image& a, const Image& b, float gain) {
  require_same_size(a, b);
  Image out{a.width, a.height, std::vector<float>(a.rgb.size())};
  for (size_t p = 0; p < a.rgb.size() / 3; ++p) {
    float e = 0;
    for (int c = 0; c < 3; ++c) e += std::abs(clamp01(a.rgb[p * 3 + c]) - clamp01(b.rgb[p * 3 + c])) / 3.0f;
    const float t = std::clamp(e * gain, 0.0f, 1.0f) * 3.0f;  // black -> red -> yellow -> white
    out.rgb[p * 3 + 0] = std::min(t, 1.0f);
    out.rgb[p * 3 + 1] = std::clamp(t - 1.0f, 0.0f, 1.0f);
    out.rgb[p * 3 + 2] = std::clamp(t - 2.0f, 0.0f, 1.0f);
  }
  return out;
}

}  // namespace lact
