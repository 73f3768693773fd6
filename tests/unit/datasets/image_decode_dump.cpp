// For tests/unit/datasets/image_decode_parity.py: decodes each file named on standard input (one path a line) with
// lact's read_image and writes to standard output, per file, "ok W H HAS_ALPHA\n" then W*H*4 RGBA bytes, or "error
// MESSAGE\n".
#include <cstdio>
#include <iostream>
#include <string>

#include "datasets/image_io.h"
#include "system/error.h"

int main() {
  std::string path;
  while (std::getline(std::cin, path)) {
    try {
      const lact::Rgba8Image image = lact::read_image(path);
      std::printf("ok %d %d %d\n", image.width, image.height, image.has_alpha ? 1 : 0);
      std::fwrite(image.pixels.data(), 1, image.pixels.size(), stdout);
    } catch (const lact::Error& e) {
      std::printf("error %s\n", e.what());
    }
  }
  return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
}
