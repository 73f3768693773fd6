// Each subcommand registers itself on the `lact` CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace lact::app {

void add_render_command(CLI::App& app);
void add_encode_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_path_command(CLI::App& app);
void add_eval_compare_command(CLI::App& app);
void add_view_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_import_command(CLI::App& app);
void add_model_command(CLI::App& app);

}  // namespace lact::app
