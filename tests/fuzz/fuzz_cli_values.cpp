// Fuzz target: the value parsers behind the CLI flags: --size (parse_image_size), --inputs / --targets view
// specs on a 40-view scene, --background and --normalize-poses. Parts of the input are separated by "\n@@\n".
#include <cmath>

#include "datasets/pose_normalization.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
const lact::Scene& scene() {
  static const lact::Scene s = [] {
    lact::Scene scene;
    scene.name = "fuzz";
    for (int i = 0; i < 40; ++i) {
      lact::SceneView v;
      v.camera.width = 16, v.camera.height = 8, v.camera.fx = v.camera.fy = 10, v.camera.cx = 8, v.camera.cy = 4;
      const double a = 0.157 * i;
      v.camera.c2w = {std::cos(a),  0, std::sin(a), 2 * std::sin(a), 0, 1, 0, 0.1 * i,
                      -std::sin(a), 0, std::cos(a), 2 * std::cos(a), 0, 0, 0, 1};
      scene.views.push_back(v);
    }
    scene.kmeans_inputs = {1, 5, 9};
    scene.kmeans_key = "fold_8_kmeans_3_input";
    return scene;
  }();
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = lact_fuzz::split_parts(data, size, 4);
  auto part = [&](size_t i) { return i < parts.size() ? parts[i] : std::string(); };
  try {
    int h = -1, w = -1;
    if (lact::parse_image_size(part(0), h, w) && (h < 1 || w < 1 || h > lact::kMaxImageSide || w > lact::kMaxImageSide))
      __builtin_trap();
    std::vector<int> inputs;
    try {
      inputs = lact::select_views(part(1), scene(), false, {}, 3, "--inputs");
    } catch (const lact::Error&) {
    }
    for (int i : inputs)
      if (i < 0 || i >= 40) __builtin_trap();
    try {
      for (int i : lact::select_views(part(2), scene(), true, inputs, 3, "--targets"))
        if (i < 0 || i >= 40) __builtin_trap();
    } catch (const lact::Error&) {
    }
    try {
      for (float c : lact::parse_background(part(3)))
        if (!(c >= 0 && c <= 1)) __builtin_trap();
    } catch (const lact::Error&) {
    }
    try {
      lact::parse_pose_normalization(part(3));
    } catch (const lact::Error&) {
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz harness: %s escaped (not lact::Error): %s\n", typeid(e).name(), e.what());
    __builtin_trap();
  }
  return 0;
}
