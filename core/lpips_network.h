// The two backbones LPIPS v0.1 measures with (core/lpips.h), as torchvision defines their `features` and the lpips
// package taps them (lpips/pretrained_networks.py):
//   - AlexNet (lpips.LPIPS(net='alex'), the package's default): five convolutions, each tapped after its ReLU;
//     a 3x3 max-pool with stride 2 after the first two;
//   - VGG16 (net='vgg', what LVSM and LaCT's papers report): thirteen 3x3 convolutions with padding 1 in five
//     blocks, a 2x2 max-pool with stride 2 between blocks; tapped after the last ReLU of each block (relu1_2,
//     relu2_2, relu3_3, relu4_3, relu5_3: 64, 128, 256, 512, 512 channels).
// The converted file names the convolutions conv0..conv{N-1} in order and the taps' linear layers lin0..lin4; its
// metadata "format" names the backbone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lact {

enum class LpipsNet { alex, vgg };

struct LpipsConv {
  int64_t outputs, inputs, kernel;
  int stride, padding;
  bool tapped;        // its ReLU's output is one of the five taps
  bool pooled_after;  // a max-pool follows its ReLU
};

struct LpipsNetwork {
  LpipsNet net;
  const char* flag_name;   // --lpips-net's word: alex, vgg
  const char* name;        // in messages: AlexNet, VGG16
  const char* format;      // the converted file's metadata "format"
  const char* cache_name;  // what `lact model fetch` records it as (pipeline/model_cache.h)
  const LpipsConv* convs;
  int conv_count;
  int pool_kernel, pool_stride;
};

inline constexpr LpipsConv kAlexNetConvs[] = {{64, 3, 11, 4, 2, true, true},
                                              {192, 64, 5, 1, 2, true, true},
                                              {384, 192, 3, 1, 1, true, false},
                                              {256, 384, 3, 1, 1, true, false},
                                              {256, 256, 3, 1, 1, true, false}};
inline constexpr LpipsConv kVgg16Convs[] = {
    {64, 3, 3, 1, 1, false, false},    {64, 64, 3, 1, 1, true, true},                                       // block 1
    {128, 64, 3, 1, 1, false, false},  {128, 128, 3, 1, 1, true, true},                                     // block 2
    {256, 128, 3, 1, 1, false, false}, {256, 256, 3, 1, 1, false, false}, {256, 256, 3, 1, 1, true, true},  // 3
    {512, 256, 3, 1, 1, false, false}, {512, 512, 3, 1, 1, false, false}, {512, 512, 3, 1, 1, true, true},  // 4
    {512, 512, 3, 1, 1, false, false}, {512, 512, 3, 1, 1, false, false}, {512, 512, 3, 1, 1, true, false}};

inline constexpr LpipsNetwork kLpipsAlexNet{
    LpipsNet::alex, "alex", "AlexNet", "lpips v0.1 alexnet", "lpips", kAlexNetConvs, 5, 3, 2};
inline constexpr LpipsNetwork kLpipsVgg16{
    LpipsNet::vgg, "vgg", "VGG16", "lpips v0.1 vgg16", "lpips-vgg", kVgg16Convs, 13, 2, 2};

constexpr const LpipsNetwork& lpips_network(LpipsNet net) { return net == LpipsNet::vgg ? kLpipsVgg16 : kLpipsAlexNet; }

// The backbone a converted file's metadata "format" names; nothing for another format.
inline const LpipsNetwork* lpips_network_of_format(const std::string& format) {
  for (const LpipsNetwork* n : {&kLpipsAlexNet, &kLpipsVgg16})
    if (format == n->format) return n;
  return nullptr;
}

// The backbone --lpips-net names (alex, vgg); nothing for another word.
inline std::optional<LpipsNet> lpips_net_named(const std::string& word) {
  for (const LpipsNetwork* n : {&kLpipsAlexNet, &kLpipsVgg16})
    if (word == n->flag_name) return n->net;
  return std::nullopt;
}

// The side every layer's output has from an input side (0: a layer has nothing left to read).
constexpr int64_t lpips_last_side(const LpipsNetwork& n, int64_t side) {
  for (int i = 0; i < n.conv_count; ++i) {
    const LpipsConv& c = n.convs[i];
    if (side + 2 * c.padding < c.kernel) return 0;
    side = (side + 2 * c.padding - c.kernel) / c.stride + 1;
    if (!c.pooled_after) continue;
    if (side < n.pool_kernel) return 0;
    side = (side - n.pool_kernel) / n.pool_stride + 1;
  }
  return side;
}

// The smallest image side every layer of `n` has an output for: derived from the layers, not written down.
constexpr int lpips_smallest_side(const LpipsNetwork& n) {
  int side = 1;
  while (lpips_last_side(n, side) < 1) ++side;
  return side;
}

static_assert(lpips_smallest_side(kLpipsAlexNet) == 31, "AlexNet's two 3x3 stride-2 pools after a stride-4 conv");
static_assert(lpips_smallest_side(kLpipsVgg16) == 16, "VGG16's four 2x2 stride-2 pools: 2^4");

}  // namespace lact
