// Fuzz target: a camera path file (`lact path` output, or anyone's JSON) as `lact render --path` reads it.
// Every frame that reads must be a camera render accepts.
#include "datasets/camera_path_io.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path file = lact_fuzz::work_dir() / "path.json";
  static const bool cleanup = (std::atexit(lact_fuzz::remove_work_dir), true);
  (void)cleanup;
  lact_fuzz::write_file(file, data, size);
  lact_fuzz::expect_only_lact_errors([&] {
    const std::vector<lact::Camera> frames = lact::read_camera_path(file.string());
    if (frames.empty()) __builtin_trap();
    for (const lact::Camera& c : frames) {
      try {
        c.validate("fuzzed frame");
      } catch (const lact::Error&) {
        __builtin_trap();  // the reader let through a camera render would reject
      }
    }
  });
  return 0;
}
