// The flags several subcommands share, registered on a CLI11 command: the data flags (--data --scene --inputs
// --size --background --normalize-poses --seed --downscale) and the backend flags (--threads --device
// --precision --no-graphs).
#pragma once

#include <CLI/CLI.hpp>

#include "pipeline/backend_options.h"
#include "pipeline/scene_selection.h"
#include "session/scene_options.h"

namespace lact::app {

void add_data_options(CLI::App& command, DataOptions& options);
// What `lact view` and `lact serve` open alike: --model, the data flags, --state, --targets, --camera and
// --render-threads (session/scene_options.h). `states`: --state may be given several times (lact serve's many
// scenes), each one into it.
void add_scene_source_options(CLI::App& command, session::SceneOptions& options,
                              std::vector<std::string>* states = nullptr);
void add_common_options(CLI::App& command, CommonOptions& options);
// --distributed and --memory-limit (encode, render, bench).
void add_distributed_options(CLI::App& command, CommonOptions& options);
// --inputs of a command without --targets (encode, path): its help offers no 'rest' (the views that are not
// targets), and a 'rest' is refused as it is read, in words that do not ask for a --targets the command lacks.
void inputs_without_targets(CLI::App& command);
// --max-seconds (encode, render): refuse work estimated to take longer.
void add_time_limit_option(CLI::App& command, CommonOptions& options);
// --warnings off|on|error: the guard rails of encode and render (pipeline/guard_rails.h).
void add_warnings_option(CLI::App& command, std::string& warnings);
// --model's value: a cached official checkpoint's name becomes its converted file (pipeline/model_cache.h).
CLI::Validator model_file();
// A number from min to max that is finite (CLI::Range accepts NaN).
CLI::Validator finite_range(double min, double max);
// A decimal whole number from 0 to max (CLI11's unsigned reading wraps "-1" and saturates values past 2^64).
CLI::Validator whole_number_up_to(uint64_t max);

}  // namespace lact::app
