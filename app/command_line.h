// A subcommand's command line as the ranks of one job compare it (pipeline/run_agreement.h, the first agreement).
#pragma once

#include <CLI/CLI.hpp>

#include "pipeline/run_agreement.h"

namespace lact::app {

// The subcommand and every flag as given, except what may differ between nodes without changing a result
// (--threads, --memory-limit, --quiet): files the run reads only as given or not (their content is compared
// later), the files and folder it writes by absolute path (rank 0 writes them), any other flag by its values.
RunDigest command_line_digest(const CLI::App& command);

}  // namespace lact::app
