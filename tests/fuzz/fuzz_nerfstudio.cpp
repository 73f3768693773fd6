// Fuzz target: a nerfstudio / DL3DV / instant-ngp transforms.json, written as <tmp>/ns/transforms.json and read
// by file (at downscale 1 or 2) or by folder.
#include "tests/fuzz/fuzz_common.h"

namespace {

const lact_fuzz::fs::path& scene_dir() {
  static const lact_fuzz::fs::path dir = [] {
    const lact_fuzz::fs::path d = lact_fuzz::work_dir() / "ns";
    lact_fuzz::write_images(d, {"images/frame_00001.png", "images/frame_00002.png", "images/frame_00003.png",
                                "images_2/frame_00001.png", "images_2/frame_00002.png", "r_0.png"});
    std::atexit(lact_fuzz::remove_work_dir);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path file = scene_dir() / "transforms.json";
  lact_fuzz::write_file(file, data, size);
  switch (size % 3) {
    case 0:
      lact_fuzz::read_and_exercise(file);
      break;
    case 1:
      lact_fuzz::read_and_exercise(scene_dir());
      break;
    default: {
      lact::ReadOptions options;
      options.downscale = 2;
      lact_fuzz::read_and_exercise(file, options);
      break;
    }
  }
  return 0;
}
