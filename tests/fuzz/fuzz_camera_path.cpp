// Fuzz target: a camera path file (`lact path` output, or anyone's JSON) as `lact render --path` reads it.
// Every frame that reads must be a camera render accepts.
#include "datasets/camera_path_io.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path file = lact_fuzz::work_dir() / "path.json";
  static const bool cleanup = (std::atexit(lact_fuzz::remove_work_dir), true);
  (void)cleanup;
  lact_fuzz::write_file(file, data, size);
  try {
    const std::vector<lact::Camera> frames = lact::read_camera_path(file.string());
    if (frames.empty()) __builtin_trap();
    for (const lact::Camera& c : frames) c.validate("fuzzed frame");  // throws only on a reader bug: trap below
  } catch (const lact::Error& e) {
    if (lact_fuzz::verbose()) std::fprintf(stderr, "lact::Error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz harness: %s escaped (not lact::Error): %s\n", typeid(e).name(), e.what());
    __builtin_trap();
  }
  return 0;
}
