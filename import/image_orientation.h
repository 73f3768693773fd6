// Photos as a viewer shows them: the EXIF orientation of a JPEG (phones store the sensor's pixels and a tag
// that says how to turn them) applied to the pixels, and a working size capped on the long side; and the camera
// the EXIF block names (photos of one camera share its intrinsics).
#pragma once

#include <string>
#include <string_view>

#include "datasets/image_io.h"

namespace lact {

// The EXIF orientation (1..8) of JPEG bytes: 1 when there is no EXIF block, no orientation tag, or the block
// is malformed (every offset is bounds-checked; a broken tag never reads outside `jpeg`).
int jpeg_exif_orientation(std::string_view jpeg);
// The camera the EXIF block of JPEG bytes names: Make and Model (0x010F, 0x0110) of IFD0, "Make Model" (the make
// once when the model starts with it), printable ASCII only, each at most 64 bytes; "" when there is none.
std::string jpeg_exif_camera(std::string_view jpeg);

// The image turned upright for `orientation` (2..8 mirror and/or rotate; 5..8 swap width and height).
Rgba8Image apply_exif_orientation(const Rgba8Image& image, int orientation);

// Shrunk so its long side is at most `max_side` (area average: each output pixel the mean of the source area
// it covers, partly covered pixels weighted by the part); returned as it is when already small enough or max_side <= 0.
Rgba8Image shrink_to_long_side(const Rgba8Image& image, int max_side);

}  // namespace lact
