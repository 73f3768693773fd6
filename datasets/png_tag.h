// The mark lact puts in every PNG file it writes (a tEXt chunk "Software" = "lact" right after IHDR), so that a
// later run can tell its own images in --out from a user's file of the same name (pipeline/output_ownership.h).
#pragma once

#include <string>

namespace lact {

// `png` (a whole PNG file whose first chunk is IHDR, as stb writes it) with lact's tEXt chunk after the IHDR;
// `png` unchanged when it does not start that way.
std::string with_lact_tag(const std::string& png);
// True when `path` is a regular file (not through a link) and a PNG that starts as with_lact_tag() makes it (reads its
// first 58 bytes; a missing or unreadable file is false).
bool is_lact_png(const std::string& path);

}  // namespace lact
