// Fuzz target: NeRF-synthetic splits. The input, split at "\n@@\n", becomes <tmp>/synth/transforms_train.json,
// transforms_val.json and transforms_test.json (absent parts remove the file). Reads the train file (its split
// comes from the name) and the folder (all splits present).
#include "tests/fuzz/fuzz_common.h"

namespace {

const lact_fuzz::fs::path& scene_dir() {
  static const lact_fuzz::fs::path dir = [] {
    const lact_fuzz::fs::path d = lact_fuzz::work_dir() / "synth";
    lact_fuzz::write_images(
        d, {"train/r_0.png", "train/r_1.png", "train/r_2.png", "val/r_0.png", "test/r_0.png", "test/r_1.png"});
    std::atexit(lact_fuzz::remove_work_dir);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path& dir = scene_dir();
  const std::vector<std::string> parts = lact_fuzz::split_parts(data, size, 3);
  const char* names[3] = {"transforms_train.json", "transforms_val.json", "transforms_test.json"};
  for (size_t i = 0; i < 3; ++i) {
    if (i < parts.size())
      lact_fuzz::write_file(dir / names[i], parts[i]);
    else
      lact_fuzz::remove_file(dir / names[i]);
  }
  lact_fuzz::read_and_exercise(dir / names[0]);
  lact_fuzz::read_and_exercise(dir);
  return 0;
}
