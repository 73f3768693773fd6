// LPIPS v0.1 with the AlexNet backbone (Zhang et al., "The Unreasonable Effectiveness of Deep Features as a
// Perceptual Metric", CVPR 2018), as the `lpips` package computes it (lpips.LPIPS(net='alex'), version 0.1):
//   1. each image's values clamped to [0, 1] (as PSNR and SSIM take them), mapped to [-1, 1], then shifted and
//      scaled per channel: (x - shift) / scale, shift (-0.030, -0.088, -0.188), scale (0.458, 0.448, 0.450);
//   2. torchvision's AlexNet `features` up to its fifth ReLU: conv 11x11 stride 4 padding 2 (64), ReLU [tap 1],
//      max-pool 3 stride 2, conv 5x5 padding 2 (192), ReLU [tap 2], max-pool, conv 3x3 padding 1 (384), ReLU
//      [tap 3], conv 3x3 (256), ReLU [tap 4], conv 3x3 (256), ReLU [tap 5];
//   3. each tap unit-normalised over its channels at every pixel: f / (sqrt(sum_c f_c^2) + 1e-10);
//   4. the distance: for each tap, (f_a - f_b)^2 weighted by the learned 1x1 linear layer (one weight per channel,
//      no bias) and averaged over the tap's pixels; the five summed.
// Computed on a Backend (conv2d, max_pool2d and the column-norm ops); the weights are the two published files
// converted into one (tools/convert_checkpoint.py --lpips).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/camera.h"
#include "kernels/backend.h"

namespace lact {

constexpr int kLpipsTaps = 5;
// The smallest image side LPIPS measures: AlexNet's two poolings need a first-layer output of at least 7.
constexpr int kLpipsSmallestSide = 31;
// The "format" the converter writes into the file's metadata.
inline constexpr const char* kLpipsFormat = "lpips v0.1 alexnet";

class Lpips {
 public:
  // Reads the converted weights onto `backend`; Error naming the file and what is wrong with it.
  Lpips(const std::string& path, Backend& backend);
  // Random weights of the right shapes (normal, He-scaled convolutions; uniform [0, 1) linear layers): for
  // timing (lact bench --lpips), never for a score.
  Lpips(Backend& backend, uint64_t seed);

  // One image's five unit-normalised taps: computed once, compared with several images (a target with its
  // render and with the nearest input). Error for a side under kLpipsSmallestSide.
  struct Features {
    std::array<Tensor, kLpipsTaps> taps;  // [1, C, H, W] each
  };
  Features features(const Image& image) const;
  // LPIPS between the images of two Features (of one size).
  double distance(const Features& a, const Features& b) const;
  double distance(const Image& a, const Image& b) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Backend& backend_;
  std::array<Tensor, kLpipsTaps> conv_weights_, conv_biases_;
  std::array<std::vector<double>, kLpipsTaps> linear_;  // the 1x1 linear layers: one weight per channel
};

}  // namespace lact
