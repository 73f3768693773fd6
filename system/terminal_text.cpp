#include "system/terminal_text.h"

#include <cstdint>
#include <cstdio>

#include "system/utf8_text.h"

namespace lact {

namespace {

// A code point a terminal acts on (or that reorders or breaks what is shown) rather than displays.
bool is_control(char32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x200e || c == 0x200f || c == 0x2028 ||
         c == 0x2029 || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// The pieces of the sanitised text, each one character on the screen (a code point, or one escape).
template <typename Visit>
void for_each_piece(std::string_view text, Visit visit) {
  char escape[16];
  char32_t c = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_at(text, i, c);
    if (n == 0) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(static_cast<uint8_t>(text[i])));
      visit(std::string_view(escape));
      i += 1;
      continue;
    }
    if (!is_control(c)) {
      visit(text.substr(i, n));
    } else if (c < 0x80) {
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(c));
      visit(std::string_view(escape));
    } else {
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      visit(std::string_view(escape));
    }
    i += n;
  }
}

}  // namespace

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_piece(text, [&](std::string_view piece) { out.append(piece); });
  return out;
}

std::string terminal_column(std::string_view text, size_t width) {
  std::string out;
  size_t shown = 0;
  bool full = false;
  for_each_piece(text, [&](std::string_view piece) {
    // An escape is several columns wide: it fits whole or not at all.
    const size_t columns = piece.size() > 1 && piece[0] == '\\' ? piece.size() : 1;
    if (full || shown + columns > width) {
      full = true;  // nothing after a piece that did not fit
      return;
    }
    out.append(piece);
    shown += columns;
  });
  out.append(width - shown, ' ');
  return out;
}

}  // namespace lact
