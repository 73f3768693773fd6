#include "system/utf8_text.h"

#include <cstdint>

namespace lact {

size_t utf8_sequence_at(std::string_view text, size_t at, char32_t& code_point) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(at);
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  size_t length;
  char32_t value, least;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, value = lead & 0x1f, least = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, value = lead & 0x0f, least = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, value = lead & 0x07, least = 0x10000;
  } else {
    return 0;  // a continuation byte, or a lead byte no valid sequence starts with (0xc0, 0xc1, 0xf5..0xff)
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
    value = (value << 6) | (byte(at + i) & 0x3f);
  }
  if (value < least || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  code_point = value;
  return length;
}

bool is_utf8(std::string_view text) {
  char32_t c;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_at(text, i, c);
    if (!n) return false;
    i += n;
  }
  return true;
}

namespace {
constexpr char kHex[] = "0123456789abcdef";
void append_byte_escape(std::string& out, uint8_t b) {
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 15];
}
}  // namespace

std::string utf8_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t c;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_at(text, i, c);
    if (n) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      append_byte_escape(out, static_cast<uint8_t>(text[i++]));
    }
  }
  return out;
}

nlohmann::json with_utf8_strings(const nlohmann::json& j) {
  if (j.is_string()) return utf8_escaped(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& item : j) out.push_back(with_utf8_strings(item));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : j.items()) out[utf8_escaped(key)] = with_utf8_strings(value);
    return out;
  }
  return j;
}

std::string hex_of(std::string_view bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (char ch : bytes) {
    const auto b = static_cast<uint8_t>(ch);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool bytes_of_hex(std::string_view hex, std::string& bytes) {
  const auto digit = [](char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2) return false;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = digit(hex[i]), low = digit(hex[i + 1]);
    if (high < 0 || low < 0) return false;
    out += static_cast<char>(high * 16 + low);
  }
  bytes = std::move(out);
  return true;
}

}  // namespace lact
