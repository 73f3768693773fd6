#include "system/json_text.h"

#include <algorithm>
#include <string>

#include "system/error.h"

namespace lact {

namespace {
// The deepest bracket nesting outside strings (the text need not be valid JSON: the parser judges that).
int nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > kMaxJsonDepth) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}
// Python's json.dump writes NaN and Infinity, which JSON has no words for: said when the parse stopped at one.
std::string non_json_number(std::string_view text, size_t byte) {
  const size_t from = byte > 10 ? byte - 10 : 0;
  const std::string_view near = text.substr(std::min(from, text.size()), 20);
  if (near.find("NaN") == std::string_view::npos && near.find("Infinity") == std::string_view::npos) return "";
  return ": NaN and Infinity are not JSON (Python's json.dump writes them for a value that is not a finite number: "
         "the file's writer computed no number there)";
}
}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& where) {
  if (nesting_depth(text) > kMaxJsonDepth)
    throw Error(where, "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep (refused)");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(where, std::string("corrupt JSON (") + e.what() + ")" + non_json_number(text, e.byte));
  } catch (const nlohmann::json::exception& e) {
    throw Error(where, std::string("corrupt JSON (") + e.what() + ")");
  }
}

}  // namespace lact
