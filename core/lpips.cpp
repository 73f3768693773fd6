#include "core/lpips.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/safetensors.h"
#include "system/error.h"

namespace lact {

namespace {

// The lpips package's ScalingLayer (float32 there too).
constexpr float kShift[3] = {-0.030f, -0.088f, -0.188f};
constexpr float kScale[3] = {0.458f, 0.448f, 0.450f};
constexpr float kNormEpsilon = 1e-10f;  // the lpips package's normalize_tensor

int64_t conv_side(int64_t side, const LpipsConv& layer) {
  return (side + 2 * layer.padding - layer.kernel) / layer.stride + 1;
}
int64_t pool_side(int64_t side, const LpipsNetwork& n) { return (side - n.pool_kernel) / n.pool_stride + 1; }

// The backbone `file` holds, by its metadata "format"; Error naming the file otherwise.
const LpipsNetwork& network_of(const SafetensorsFile& file, const std::string& path) {
  const auto format = file.metadata().find("format");
  const std::string found = format == file.metadata().end() ? "" : format->second;
  if (const LpipsNetwork* network = lpips_network_of_format(found)) return *network;
  throw Error(path, "not LPIPS weights (metadata format '" + found + "', expected '" + kLpipsAlexNet.format + "' or '" +
                        kLpipsVgg16.format +
                        "'; `lact model convert --lpips BACKBONE.pth LINEAR.pth -o FILE` makes them)");
}

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

Lpips::Lpips(const std::string& path, Backend& backend) : Lpips(SafetensorsFile(path), path, backend) {}

Lpips::Lpips(const SafetensorsFile& file, const std::string& path, Backend& backend)
    : path_(path), backend_(backend), network_(network_of(file, path)) {
  const std::string what = std::string("LPIPS's ") + network_.name;
  for (int i = 0; i < network_.conv_count; ++i) {
    const LpipsConv& layer = network_.convs[i];
    const std::string conv = "conv" + std::to_string(i) + ".";
    conv_weights_.push_back(file.load_tensor(backend, conv + "weight",
                                             {layer.outputs, layer.inputs, layer.kernel, layer.kernel}, what.c_str()));
    conv_biases_.push_back(file.load_tensor(backend, conv + "bias", {layer.outputs}, what.c_str()));
  }
  int tap = 0;
  for (int i = 0; i < network_.conv_count; ++i) {
    if (!network_.convs[i].tapped) continue;
    const int64_t channels = network_.convs[i].outputs;
    const std::vector<float> linear =
        file.read_finite_floats("lin" + std::to_string(tap) + ".weight", {channels}, what.c_str());
    linear_[tap++].assign(linear.begin(), linear.end());
  }
}

Lpips::Lpips(Backend& backend, uint64_t seed, LpipsNet net)
    : path_("random weights"), backend_(backend), network_(lpips_network(net)) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int tap = 0;
  for (int i = 0; i < network_.conv_count; ++i) {
    const LpipsConv& layer = network_.convs[i];
    const float scale = std::sqrt(2.0f / static_cast<float>(layer.inputs * layer.kernel * layer.kernel));
    std::vector<float> weight(static_cast<size_t>(layer.outputs * layer.inputs * layer.kernel * layer.kernel));
    for (float& w : weight) w = normal(rng) * scale;
    std::vector<float> bias(static_cast<size_t>(layer.outputs));
    for (float& b : bias) b = 0.1f * normal(rng);
    conv_weights_.push_back(
        backend.from_host({layer.outputs, layer.inputs, layer.kernel, layer.kernel}, weight.data()));
    conv_biases_.push_back(backend.from_host({layer.outputs}, bias.data()));
    if (!layer.tapped) continue;
    linear_[tap].resize(static_cast<size_t>(layer.outputs));
    for (double& w : linear_[tap++]) w = uniform(rng);
  }
}

Lpips::Features Lpips::features(const Image& image) const {
  const int smallest = smallest_side();
  if (image.height < smallest || image.width < smallest)
    throw Error("LPIPS", "an image of " + std::to_string(image.height) + "x" + std::to_string(image.width) +
                             " is too small: " + network_.name + "'s poolings need at least " +
                             std::to_string(smallest) + " pixels a side");
  Backend& be = backend_;
  const std::vector<float> input = network_input(image);
  Tensor x = be.from_host({1, 3, image.height, image.width}, input.data());
  Features out;
  int tap = 0;
  for (int i = 0; i < network_.conv_count; ++i) {
    const LpipsConv& layer = network_.convs[i];
    Tensor y = be.empty({1, layer.outputs, conv_side(x.dim(2), layer), conv_side(x.dim(3), layer)});
    be.conv2d(x, conv_weights_[i], conv_biases_[i], layer.stride, layer.padding, true, y);
    if (layer.tapped) out.taps[tap++] = y;  // normalised below: the next layer reads it raw
    x = y;
    if (!layer.pooled_after) continue;
    x = be.empty({1, layer.outputs, pool_side(y.dim(2), network_), pool_side(y.dim(3), network_)});
    be.max_pool2d(y, network_.pool_kernel, network_.pool_stride, x);
  }
  for (Tensor& t : out.taps) normalize_channels(be, t);
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

const LpipsNetwork& lpips_network_of_file(const std::string& path) { return network_of(SafetensorsFile(path), path); }

}  // namespace lact
