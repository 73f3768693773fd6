// Text from data (scene names, paths, file metadata, error messages that quote them), made safe to print on a
// terminal: no byte that a terminal acts on gets through, so a name cannot move the cursor, recolour, retitle
// the window or hide what was printed before it.
//
// Escaped visibly, on one line:
//   - C0 controls, line breaks and tabs included, and DEL: \xNN (ESC is \x1b, a line break \x0a);
//   - bytes that are not valid UTF-8 (among them the raw C1 bytes 0x80-0x9f): \xNN;
//   - the C1 controls U+0080-U+009F written as UTF-8, the line and paragraph separators (U+2028, U+2029) and the
//     bidirectional controls (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069): \uNNNN.
// Everything else (printable ASCII and valid UTF-8 text of any script) is unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lact {

std::string terminal_text(std::string_view text);

// terminal_text(text) as a table column: cut to at most `width` characters (never inside a UTF-8 sequence or
// an escape) and padded with spaces to `width`.
std::string terminal_column(std::string_view text, size_t width);

}  // namespace lact
