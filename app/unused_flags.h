// A flag given where the command would not use it is refused, not ignored: `lact info MODEL --size 64x64` or
// `lact path turntable --data D` would otherwise look as if the flag did something.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace lact::app {

// Error naming the first of `flags` given on `command`, with `why` ("needs --data").
void refuse_unused_flags(const CLI::App& command, const std::vector<std::string>& flags, const std::string& why);

// The data flags (app/flags.h's add_data_options) besides --data.
const std::vector<std::string>& data_detail_flags();

}  // namespace lact::app
