#include "system/json_text.h"

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
}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& where) {
  if (nesting_depth(text) > kMaxJsonDepth)
    throw Error(where, "JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep (refused)");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(where, std::string("corrupt JSON (") + e.what() + ")");
  }
}

}  // namespace lact
