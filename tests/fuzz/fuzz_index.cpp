// Fuzz target: index files. The first byte picks the index format ('t': index.txt, one path per line;
// anything else: index.json). The rest, split at "\n@@\n", is the index, then <tmp>/idx/scene/opencv_cameras.json,
// then <tmp>/idx/other/transforms.json (absent parts remove the file), so an index can point at fuzzed scenes.
#include "tests/fuzz/fuzz_common.h"

namespace {

const lact_fuzz::fs::path& index_dir() {
  static const lact_fuzz::fs::path dir = [] {
    const lact_fuzz::fs::path d = lact_fuzz::work_dir() / "idx";
    lact_fuzz::write_images(d, {"scene/images/000.png", "scene/images/001.png", "other/images/frame_00001.png",
                                "other/images/frame_00002.png"});
    std::atexit(lact_fuzz::remove_work_dir);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const lact_fuzz::fs::path& dir = index_dir();
  const bool text = data[0] == 't';
  const std::vector<std::string> parts = lact_fuzz::split_parts(data + 1, size - 1, 3);
  const lact_fuzz::fs::path index = dir / (text ? "index.txt" : "index.json");
  lact_fuzz::remove_file(dir / (text ? "index.json" : "index.txt"));
  lact_fuzz::write_file(index, parts[0]);
  const lact_fuzz::fs::path scenes[2] = {dir / "scene" / "opencv_cameras.json", dir / "other" / "transforms.json"};
  for (size_t i = 0; i < 2; ++i) {
    if (i + 1 < parts.size())
      lact_fuzz::write_file(scenes[i], parts[i + 1]);
    else
      lact_fuzz::remove_file(scenes[i]);
  }
  lact_fuzz::read_and_exercise(index);
  return 0;
}
