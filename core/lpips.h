// LPIPS v0.1 (Zhang et al., "The Unreasonable Effectiveness of Deep Features as a Perceptual Metric", CVPR 2018)
// with the AlexNet or the VGG16 backbone, as the `lpips` package computes it (lpips.LPIPS(net='alex' | 'vgg'),
// version 0.1; AlexNet described here, VGG16 in core/lpips_network.h):
//   1. each image's values clamped to [0, 1] (as PSNR and SSIM take them), mapped to [-1, 1], then shifted and
//      scaled per channel: (x - shift) / scale, shift (-0.030, -0.088, -0.188), scale (0.458, 0.448, 0.450);
//   2. torchvision's AlexNet `features` up to its fifth ReLU: conv 11x11 stride 4 padding 2 (64), ReLU [tap 1],
//      max-pool 3 stride 2, conv 5x5 padding 2 (192), ReLU [tap 2], max-pool, conv 3x3 padding 1 (384), ReLU
//      [tap 3], conv 3x3 (256), ReLU [tap 4], conv 3x3 (256), ReLU [tap 5];
//   3. each tap unit-normalised over its channels at every pixel: f / (sqrt(sum_c f_c^2) + 1e-10);
//   4. the distance: for each tap, (f_a - f_b)^2 weighted by the learned 1x1 linear layer (one weight per channel,
//      no bias) and averaged over the tap's pixels; the five summed.
// Computed on a Backend (conv2d, max_pool2d and the column-norm ops); the weights are the two published files
// converted into one (tools/convert_checkpoint.py --lpips), whose metadata "format" says which backbone.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/camera.h"
#include "core/lpips_network.h"
#include "kernels/backend.h"

namespace lact {

class SafetensorsFile;

constexpr int kLpipsTaps = 5;
// The smallest image side LPIPS measures whatever the backbone (AlexNet's 31; VGG16's is 16: Lpips::smallest_side).
constexpr int kLpipsSmallestSide = std::max(lpips_smallest_side(kLpipsAlexNet), lpips_smallest_side(kLpipsVgg16));
// The "format" the converter writes into an AlexNet file's metadata (a VGG16 file's: kLpipsVgg16.format).
inline constexpr const char* kLpipsFormat = kLpipsAlexNet.format;

class Lpips {
 public:
  // Reads the converted weights onto `backend`, the backbone their metadata names; Error naming the file and
  // what is wrong with it.
  Lpips(const std::string& path, Backend& backend);
  // Random weights of the right shapes (normal, He-scaled convolutions; uniform [0, 1) linear layers): for
  // timing (lact bench --lpips), never for a score.
  Lpips(Backend& backend, uint64_t seed, LpipsNet net = LpipsNet::alex);

  // One image's five unit-normalised taps: computed once, compared with several images (a target with its
  // render and with the nearest input). Error for a side under smallest_side().
  struct Features {
    std::array<Tensor, kLpipsTaps> taps;  // [1, C, H, W] each
  };
  Features features(const Image& image) const;
  // LPIPS between the images of two Features (of one size).
  double distance(const Features& a, const Features& b) const;
  double distance(const Image& a, const Image& b) const;

  const std::string& path() const { return path_; }
  const LpipsNetwork& network() const { return network_; }
  int smallest_side() const { return lpips_smallest_side(network_); }

 private:
  Lpips(const SafetensorsFile& file, const std::string& path, Backend& backend);

  std::string path_;
  Backend& backend_;
  const LpipsNetwork& network_;
  std::vector<Tensor> conv_weights_, conv_biases_;      // one each a convolution
  std::array<std::vector<double>, kLpipsTaps> linear_;  // the 1x1 linear layers: one weight per channel
};

// The backbone of the LPIPS weights in `path`, by its metadata "format" alone; Error naming the file when it is
// not LPIPS weights.
const LpipsNetwork& lpips_network_of_file(const std::string& path);

}  // namespace lact
