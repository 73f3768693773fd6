// Fuzz target: a COLMAP sparse model. The first byte picks how it is written and read (bit 0: text .txt, else
// binary .bin; bit 1: the model folder with --images <tmp>/colmap/other, else the project folder holding
// sparse/0 and images/; bit 2: --downscale 2, reading images_2/). The rest, split at "\n@@\n", is cameras.*, then
// images.* (an absent part gives an empty file). The images folders hold small PNGs named a.png, b.png, c.png.
#include "tests/fuzz/fuzz_common.h"

namespace {

const lact_fuzz::fs::path& project_dir() {
  static const lact_fuzz::fs::path dir = [] {
    const lact_fuzz::fs::path d = lact_fuzz::work_dir() / "colmap";
    lact_fuzz::write_images(d, {"images/a.png", "images/b.png", "images/c.png", "images/sub/d.png", "images_2/a.png",
                                "images_2/b.png", "other/a.png", "other/c.png"});
    std::atexit(lact_fuzz::remove_work_dir);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const lact_fuzz::fs::path& dir = project_dir();
  const lact_fuzz::fs::path sparse = dir / "sparse" / "0";
  const int mode = data[0];
  const std::vector<std::string> parts = lact_fuzz::split_parts(data + 1, size - 1, 2);
  const std::string ext = mode & 1 ? ".txt" : ".bin";
  for (const char* stale : {"cameras.bin", "images.bin", "cameras.txt", "images.txt"})
    lact_fuzz::remove_file(sparse / stale);
  lact_fuzz::write_file(sparse / ("cameras" + ext), parts[0]);
  lact_fuzz::write_file(sparse / ("images" + ext), parts.size() > 1 ? parts[1] : std::string());
  lact::ReadOptions options;
  if (mode & 4) options.downscale = 2;
  if (mode & 2) {
    options.images = (dir / "other").string();
    lact_fuzz::read_and_exercise(sparse, options);
  } else {
    lact_fuzz::read_and_exercise(dir, options);
  }
  return 0;
}
