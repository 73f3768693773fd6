// Fuzz target: a LaCT per-scene camera file (list of frames, Long-LRM / DL3DV dict, LVSM frames), written as
// <tmp>/scene/opencv_cameras.json and read by file or by folder.
#include "tests/fuzz/fuzz_common.h"

namespace {

const lact_fuzz::fs::path& scene_dir() {
  static const lact_fuzz::fs::path dir = [] {
    const lact_fuzz::fs::path d = lact_fuzz::work_dir() / "scene";
    lact_fuzz::write_images(d, {"images/000.png", "images/001.png", "images/002.png", "images/003.png",
                                "images/frame0.jpg", "renderings/00000000_rgba.png", "renderings/00000001_rgba.png"});
    std::atexit(lact_fuzz::remove_work_dir);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path file = scene_dir() / "opencv_cameras.json";
  lact_fuzz::write_file(file, data, size);
  lact_fuzz::read_and_exercise(size % 2 ? scene_dir() : file);
  return 0;
}
