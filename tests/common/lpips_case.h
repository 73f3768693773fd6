// The LPIPS reference case (tests/reference/lpips_reference_test.py --make-case, in LACT_LPIPS_CASE) checked on a
// backend: tests/unit/core/test_lpips.cpp runs it on the CPU, tests/unit/kernels/test_cuda_emulated.cpp through the GPU
// backend's code.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/lpips.h"
#include "core/safetensors.h"
#include "tests/common/test_util.h"

namespace lact::test {

// A [H, W, 3] tensor of the case as an Image.
inline Image case_image(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsEntry& e = file.entry(name);
  Image image{int(e.shape[1]), int(e.shape[0]), file.read_floats(name)};
  return image;
}

// Every pair of the reference case (pair_<i>_a, pair_<i>_b, expected_<i>) of at most `max_pixels` on `be`: LPIPS
// within 1e-5 of PyTorch's. (The emulated GPU takes about 3 ms a pixel: it checks the small pairs.)
inline void check_lpips_case(Backend& be, int64_t max_pixels = int64_t{1} << 40) {
  const std::string dir = test::env_path("LACT_LPIPS_CASE");
  ASSERT_TRUE(std::filesystem::exists(dir + "/case.safetensors"))
      << "no LPIPS reference case in '" << dir << "' (tests/reference/lpips_reference_test.py --make-case DIR)";
  const Lpips lpips(dir + "/lpips.safetensors", be);
  const SafetensorsFile reference(dir + "/case.safetensors");
  int checked = 0;
  for (int pair = 0; reference.contains("expected_" + std::to_string(pair)); ++pair) {
    const std::string i = std::to_string(pair);
    const Image a = case_image(reference, "pair_" + i + "_a"), b = case_image(reference, "pair_" + i + "_b");
    if (int64_t{a.width} * a.height > max_pixels) continue;
    ++checked;
    const double expected = reference.read_floats("expected_" + i)[0];
    const double measured = lpips.distance(a, b);
    EXPECT_NEAR(measured, expected, 1e-5) << be.name() << " pair " << i << " (" << a.height << "x" << a.width << ")";
    std::printf("%s pair %s at %dx%d: LPIPS %.8f, PyTorch %.8f\n", be.name().c_str(), i.c_str(), a.height, a.width,
                measured, expected);
    EXPECT_NEAR(lpips.distance(a, a), 0.0, 1e-12);  // an image against itself
  }
  EXPECT_GE(checked, 3);
}

}  // namespace lact::test
