// Fuzz target: image file content as read_image decodes it (the format from the first bytes: PNG through
// libspng, JPEG through libjpeg-turbo, anything else refused), and read_image_size on the same bytes as a file.
// A decoded image must be the size it says and within the limits, and the header-only size must agree with it;
// lact::Error is the only acceptable failure.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const lact_fuzz::fs::path file = lact_fuzz::work_dir() / "view.png";
  static const bool cleanup = (std::atexit(lact_fuzz::remove_work_dir), true);
  (void)cleanup;
  lact_fuzz::expect_only_lact_errors([&] {
    const lact::Rgba8Image image = lact::decode_image("fuzz", data, size);
    const int64_t pixels = static_cast<int64_t>(image.width) * image.height;
    if (image.width <= 0 || image.height <= 0 || pixels > lact::kMaxImagePixels ||
        image.pixels.size() != static_cast<size_t>(pixels) * 4)
      __builtin_trap();
    lact_fuzz::write_file(file, data, size);
    int width = 0, height = 0;
    if (!lact::read_image_size(file.string(), width, height) || width != image.width || height != image.height)
      __builtin_trap();
  });
  return 0;
}
