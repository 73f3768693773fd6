// Parsing JSON from untrusted sources (dataset files, safetensors headers and metadata, reports): the nesting
// depth is bounded before nlohmann parses it, since copying or walking a deeply nested value recurses once
// per level and a file of 200,000 brackets would overflow the stack.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lact {

constexpr int kMaxJsonDepth = 64;

// Throws Error(where, ...) when `text` is not JSON or nests deeper than kMaxJsonDepth.
nlohmann::json parse_json_text(std::string_view text, const std::string& where);

}  // namespace lact
