// "Did you mean ...?" for a mistyped subcommand or flag: CLI11 alone says "A subcommand is required" for
// `lact rendr` and "The following argument was not expected: --input" for `--input 0,1`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace lact::app {

// The candidate nearest to `word` by edit distance, when it is near enough to be a typo (at most 2 edits, and
// fewer than half of the word's length); empty otherwise.
std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

// One line for a parse error that names what the user probably meant, or empty when there is no guess: an
// unknown first word (a subcommand typed wrong), or a flag the parsed subcommand does not have.
std::string parse_error_suggestion(const CLI::App& app, int argc, const char* const* argv);

}  // namespace lact::app
