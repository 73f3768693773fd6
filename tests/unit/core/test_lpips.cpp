// LPIPS (core/lpips.h) and the ops it runs on:
//  - the CUDA convolution and pooling kernels (kernels/cuda/conv_kernels.cuh) through tests/common/cuda_emulator.h,
//    against double-precision loops (tests/unit/kernels/test_ops.cpp holds the CPU and a real GPU to the same loops);
//  - LPIPS on the CPU backend, per image pair within 1e-5 of the PyTorch implementation written from the lpips
//    package's definition (tests/reference/lpips_reference_test.py --make-case: random weights in the two published
//    formats, converted by tools/convert_checkpoint.py); tests/unit/kernels/test_cuda_emulated.cpp runs the same case
//    through the GPU backend's code on the emulated device;
//  - weights files that are not LPIPS's, and images too small, refused with one Error naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "core/lpips.h"
#include "core/safetensors.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/conv_kernels.cuh"
#include "system/error.h"
#include "tests/common/conv_reference.h"
#include "tests/common/lpips_case.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::random_values;
using test::relative_error;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// The kernels write every output (outputs start as NaN) and agree with the loops: 1e-5 relative, exact maxima.
TEST(EmulatedCudaConv, Conv2dAndMaxPoolMatchDoubleLoops) {
  cuda_emulation::Launcher launch;
  unsigned seed = 70;
  for (const test::ConvShape& s : test::conv_test_shapes())
    for (bool with_bias : {true, false}) {
      const auto x = random_values(s.batch * s.channels * s.height * s.width, ++seed);
      const auto w = random_values(s.outputs * s.channels * s.kh * s.kw, ++seed, 0.3f);
      const auto bias = with_bias ? random_values(s.outputs, ++seed) : std::vector<float>{};
      for (bool relu : {true, false}) {
        std::vector<float> y(s.batch * s.outputs * s.out_h() * s.out_w(), kNaN);
        cuda::conv2d(launch, x.data(), w.data(), with_bias ? bias.data() : nullptr, y.data(), s.batch, s.channels,
                     s.height, s.width, s.outputs, s.kh, s.kw, s.stride, s.padding, relu);
        EXPECT_LT(relative_error(y, test::naive_conv2d(s, x, w, bias, relu)), 1e-5)
            << s.channels << "->" << s.outputs << " kernel " << s.kh << "x" << s.kw << " bias " << with_bias << " relu "
            << relu;
      }
    }
  for (auto [height, width, kernel, stride] : {std::tuple{15, 15, 3, 2}, {31, 20, 3, 2}, {9, 7, 2, 3}}) {
    const int64_t planes = 5;
    const auto x = random_values(planes * height * width, ++seed);
    std::vector<float> y(planes * ((height - kernel) / stride + 1) * ((width - kernel) / stride + 1), kNaN);
    cuda::max_pool2d(launch, x.data(), y.data(), planes, height, width, kernel, stride);
    EXPECT_EQ(std::vector<double>(y.begin(), y.end()), test::naive_max_pool2d(planes, height, width, kernel, stride, x))
        << height << "x" << width << " kernel " << kernel << " stride " << stride;
  }
}

TEST(Lpips, MatchesPyTorchOnTheCpu) {
  std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  test::check_lpips_case(*cpu);
}

// A copy of the reference case's weights file with `change` applied to its tensors and metadata.
std::string altered_weights(
    const std::string& out,
    const std::function<void(std::map<std::string, SafetensorsTensor>&, std::map<std::string, std::string>&)>& change) {
  const SafetensorsFile file(test::env_path("LACT_LPIPS_CASE") + "/lpips.safetensors");
  std::map<std::string, SafetensorsTensor> tensors;
  for (const auto& [name, entry] : file.entries()) tensors[name] = {entry.shape, file.read_floats(name)};
  std::map<std::string, std::string> metadata = file.metadata();
  change(tensors, metadata);
  write_safetensors(out, tensors, metadata);
  return out;
}

// The Error's message, or "no error".
std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Lpips, RefusesFilesThatAreNotItsWeightsAndImagesTooSmall) {
  std::unique_ptr<Backend> cpu = make_cpu_backend(2);
  const std::string dir = std::filesystem::temp_directory_path() / ("lact_lpips_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  using Tensors = std::map<std::string, SafetensorsTensor>;
  using Metadata = std::map<std::string, std::string>;
  const std::string no_format =
      altered_weights(dir + "/no_format.safetensors", [](Tensors&, Metadata& m) { m.clear(); });
  EXPECT_NE(error_of([&] { Lpips(no_format, *cpu); }).find(no_format + ": not LPIPS weights"), std::string::npos);
  const std::string short_lin = altered_weights(dir + "/short.safetensors", [](Tensors& t, Metadata&) {
    t["lin2.weight"] = {{383}, std::vector<float>(383, 0.5f)};
  });
  const std::string short_error = error_of([&] { Lpips(short_lin, *cpu); });
  EXPECT_NE(short_error.find("lin2.weight"), std::string::npos) << short_error;
  EXPECT_EQ(short_error.rfind(short_lin, 0), 0u) << short_error;
  const std::string nan_bias =
      altered_weights(dir + "/nan.safetensors", [](Tensors& t, Metadata&) { t["conv3.bias"].values[7] = kNaN; });
  EXPECT_NE(error_of([&] { Lpips(nan_bias, *cpu); }).find("conv3.bias"), std::string::npos);
  const std::string missing =
      altered_weights(dir + "/missing.safetensors", [](Tensors& t, Metadata&) { t.erase("conv4.weight"); });
  EXPECT_NE(error_of([&] { Lpips(missing, *cpu); }).find("conv4.weight"), std::string::npos);

  const Lpips lpips(test::env_path("LACT_LPIPS_CASE") + "/lpips.safetensors", *cpu);
  const Image small{40, 30, std::vector<float>(40 * 30 * 3, 0.5f)},
      other{40, 31, std::vector<float>(40 * 31 * 3, 0.5f)};
  EXPECT_NE(error_of([&] { lpips.distance(small, small); }).find("30x40 is too small"), std::string::npos);
  EXPECT_NE(error_of([&] {
              lpips.distance(other, Image{41, 31, std::vector<float>(41 * 31 * 3, 0.5f)});
            }).find("differ in size"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { lpips.distance(other, other); }), "no error");  // 31 is enough
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lact
