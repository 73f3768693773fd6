#include "core/lpips.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/safetensors.h"
#include "system/error.h"

namespace lact {

namespace {

// AlexNet's five convolutions as torchvision defines them: output channels, input channels, kernel, stride,
// padding; a 3x3 max-pool with stride 2 follows the first two.
struct ConvLayer {
  int64_t outputs, inputs, kernel;
  int stride, padding;
  bool pooled_after;
};
constexpr std::array<ConvLayer, kLpipsTaps> kAlexNet{{{64, 3, 11, 4, 2, true},
                                                      {192, 64, 5, 1, 2, true},
                                                      {384, 192, 3, 1, 1, false},
                                                      {256, 384, 3, 1, 1, false},
                                                      {256, 256, 3, 1, 1, false}}};
constexpr int kPoolKernel = 3, kPoolStride = 2;

// The lpips package's ScalingLayer (float32 there too).
constexpr float kShift[3] = {-0.030f, -0.088f, -0.188f};
constexpr float kScale[3] = {0.458f, 0.448f, 0.450f};
constexpr float kNormEpsilon = 1e-10f;  // the lpips package's normalize_tensor

int64_t conv_side(int64_t side, const ConvLayer& layer) {
  return (side + 2 * layer.padding - layer.kernel) / layer.stride + 1;
}
int64_t pool_side(int64_t side) { return (side - kPoolKernel) / kPoolStride + 1; }

// The image as the network's input [1, 3, H, W]: clamped to [0, 1], mapped to [-1, 1], shifted and scaled.
std::vector<float> network_input(const Image& image) {
  const int64_t pixels = int64_t{image.width} * image.height;
  std::vector<float> planes(static_cast<size_t>(3 * pixels));
  for (int64_t p = 0; p < pixels; ++p)
    for (int c = 0; c < 3; ++c) {
      const float value = std::min(std::max(image.rgb[p * 3 + c], 0.0f), 1.0f);
      planes[c * pixels + p] = (2.0f * value - 1.0f - kShift[c]) / kScale[c];
    }
  return planes;
}

// f / (||f||_2 over channels + eps) at every pixel of f [1, C, H, W]: the channels are the rows of [1, C, H*W].
void normalize_channels(Backend& be, Tensor& f) {
  Tensor columns = f.reshape({1, f.dim(1), f.dim(2) * f.dim(3)});
  Tensor ones = be.empty({1, f.dim(2) * f.dim(3)});
  be.fill(ones, 1.0f);
  be.restore_column_norms(columns, ones, kNormEpsilon);
}

}  // namespace

Lpips::Lpips(const std::string& path, Backend& backend) : path_(path), backend_(backend) {
  const SafetensorsFile file(path);
  const auto format = file.metadata().find("format");
  if (format == file.metadata().end() || format->second != kLpipsFormat)
    throw Error(path,
                std::string("not LPIPS weights (metadata format '") +
                    (format == file.metadata().end() ? "" : format->second) + "', expected '" + kLpipsFormat +
                    "'; `python3 -m tools.convert_checkpoint --lpips ALEXNET.pth LINEAR.pth -o FILE` makes them)");
  for (int i = 0; i < kLpipsTaps; ++i) {
    const ConvLayer& layer = kAlexNet[i];
    const std::string conv = "conv" + std::to_string(i) + ".";
    conv_weights_[i] = file.load_tensor(backend, conv + "weight",
                                        {layer.outputs, layer.inputs, layer.kernel, layer.kernel}, "LPIPS's AlexNet");
    conv_biases_[i] = file.load_tensor(backend, conv + "bias", {layer.outputs}, "LPIPS's AlexNet");
    const std::vector<float> linear =
        file.read_finite_floats("lin" + std::to_string(i) + ".weight", {layer.outputs}, "LPIPS's AlexNet");
    linear_[i].assign(linear.begin(), linear.end());
  }
}

Lpips::Lpips(Backend& backend, uint64_t seed) : path_("random weights"), backend_(backend) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int i = 0; i < kLpipsTaps; ++i) {
    const ConvLayer& layer = kAlexNet[i];
    const float scale = std::sqrt(2.0f / static_cast<float>(layer.inputs * layer.kernel * layer.kernel));
    std::vector<float> weight(static_cast<size_t>(layer.outputs * layer.inputs * layer.kernel * layer.kernel));
    for (float& w : weight) w = normal(rng) * scale;
    std::vector<float> bias(static_cast<size_t>(layer.outputs));
    for (float& b : bias) b = 0.1f * normal(rng);
    conv_weights_[i] = backend.from_host({layer.outputs, layer.inputs, layer.kernel, layer.kernel}, weight.data());
    conv_biases_[i] = backend.from_host({layer.outputs}, bias.data());
    linear_[i].resize(static_cast<size_t>(layer.outputs));
    for (double& w : linear_[i]) w = uniform(rng);
  }
}

Lpips::Features Lpips::features(const Image& image) const {
  if (image.height < kLpipsSmallestSide || image.width < kLpipsSmallestSide)
    throw Error("LPIPS", "an image of " + std::to_string(image.height) + "x" + std::to_string(image.width) +
                             " is too small: AlexNet's poolings need at least " + std::to_string(kLpipsSmallestSide) +
                             " pixels a side");
  Backend& be = backend_;
  const std::vector<float> input = network_input(image);
  Tensor x = be.from_host({1, 3, image.height, image.width}, input.data());
  Features out;
  for (int i = 0; i < kLpipsTaps; ++i) {
    const ConvLayer& layer = kAlexNet[i];
    Tensor& y = out.taps[i];
    y = be.empty({1, layer.outputs, conv_side(x.dim(2), layer), conv_side(x.dim(3), layer)});
    be.conv2d(x, conv_weights_[i], conv_biases_[i], layer.stride, layer.padding, true, y);
    x = y;
    if (!layer.pooled_after) continue;
    x = be.empty({1, layer.outputs, pool_side(y.dim(2)), pool_side(y.dim(3))});
    be.max_pool2d(y, kPoolKernel, kPoolStride, x);
  }
  for (Tensor& tap : out.taps) normalize_channels(be, tap);  // after the network: the next layer reads it raw
  return out;
}

double Lpips::distance(const Features& a, const Features& b) const {
  Backend& be = backend_;
  double total = 0;
  for (int i = 0; i < kLpipsTaps; ++i) {
    const Tensor& fa = a.taps[i];
    if (fa.shape() != b.taps[i].shape())
      throw Error("LPIPS", "features of " + shape_string(fa.shape()) + " and " + shape_string(b.taps[i].shape()) +
                               ": the images differ in size");
    const int64_t channels = fa.dim(1), pixels = fa.dim(2) * fa.dim(3);
    Tensor difference = be.empty({channels, pixels});
    be.copy(difference, fa);
    be.axpby(difference, -1.0f, b.taps[i], 1.0f);
    // sum over pixels of (weighted squares summed over channels) = sum over channels of weight x (sum of squares)
    const std::vector<double> squares = be.batched_dot(difference, difference);
    double tap = 0;
    for (int64_t c = 0; c < channels; ++c) tap += linear_[i][c] * squares[c];
    total += tap / pixels;
  }
  return total;
}

double Lpips::distance(const Image& a, const Image& b) const {
  if (a.width != b.width || a.height != b.height)
    throw Error("LPIPS", "images of " + std::to_string(a.height) + "x" + std::to_string(a.width) + " and " +
                             std::to_string(b.height) + "x" + std::to_string(b.width) + " differ in size");
  return distance(features(a), features(b));
}

}  // namespace lact
