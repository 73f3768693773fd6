// A rendered frame as the bytes a browser shows: JPEG (libjpeg-turbo through its libjpeg API, while the camera
// moves) or PNG (lossless, at rest: the same file `lact render` writes, datasets' encode_png).
#pragma once

#include <string>

#include "session/pixels.h"

namespace lact::serve {

std::string encode_jpeg(const session::Rgb8& image, int quality);  // quality 1..100; Error when it cannot
std::string encode_png(const session::Rgb8& image);                // Error when it cannot

}  // namespace lact::serve
