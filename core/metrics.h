// Image quality metrics, as the papers compute them.
#pragma once

#include "core/camera.h"

namespace lact {

// Mean squared error over every channel of every pixel, values clamped to [0, 1] first.
double mean_squared_error(const Image& a, const Image& b);
// -10 log10(MSE) on values clamped to [0, 1] (the LVSM per-image convention); 100 dB caps a perfect match.
double psnr(const Image& a, const Image& b);
double psnr_from_mse(double mse);
// SSIM as scikit-image's structural_similarity(gaussian_weights=True, sigma=1.5, data_range=1,
// channel_axis=-1) computes it (LVSM's setting): Gaussian window of radius 5 (truncate 3.5), mirror
// ('reflect') borders, sample covariance (N/(N-1), N = 121), K1 0.01, K2 0.03, the mean over the image
// cropped by 5 pixels on every side, per channel, then averaged over channels.
double ssim(const Image& a, const Image& b);
// SSIM's 11x11 window needs images larger than 10x10: the smallest side it measures.
constexpr int kSsimSmallestSide = 11;

// Per-pixel error heat map: |a - b| averaged over channels, scaled by `gain`, coloured black-red-yellow-white.
Image error_heat_map(const Image& a, const Image& b, float gain = 4.0f);

}  // namespace lact
