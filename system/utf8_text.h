// Strict UTF-8 decoding, and text that JSON can carry whatever bytes it came from.
//
// Paths and names on Linux are bytes: a folder may be named with bytes that are not UTF-8, which JSON (and
// nlohmann::json's dump) cannot hold. Where such text is written to JSON it is escaped: every byte that is not
// part of a valid UTF-8 sequence becomes the four characters \xNN (NN its value in lowercase hex); valid text
// is unchanged. The escaped form is for reading only; where the exact bytes must come back (a scene state's
// paths), they are stored beside it as hex (see hex_of / bytes_of_hex).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lact {

// The length of the valid UTF-8 sequence starting at text[at] (1-4) with its code point, or 0 where the bytes
// there are not valid UTF-8 (a stray continuation byte, an overlong form, a surrogate, above U+10FFFF, cut off).
size_t utf8_sequence_at(std::string_view text, size_t at, char32_t& code_point);

bool is_utf8(std::string_view text);

// `text` with each byte outside valid UTF-8 written as \xNN: always valid UTF-8, unchanged when it was.
std::string utf8_escaped(std::string_view text);

// A copy of `j` whose every string (object keys too) is utf8_escaped: safe to dump().
nlohmann::json with_utf8_strings(const nlohmann::json& j);

// Bytes as lowercase hex, and back; bytes_of_hex returns false on anything but pairs of hex digits.
std::string hex_of(std::string_view bytes);
bool bytes_of_hex(std::string_view hex, std::string& bytes);

}  // namespace lact
