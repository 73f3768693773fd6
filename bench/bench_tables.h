// `lact bench`'s markdown tables on stdout: every row, the device time by op (--profile), and every precision
// against fp32 in the same run.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_row.h"

namespace lact::bench {

// One line per row, with full attention's encode and render ratios to LaCT at the same views and size.
void print_table(const std::vector<Row>& rows);
// --profile: encode and render time by op for every row the backend profiled (`backend` names it when none).
void print_profiles(const std::vector<Row>& rows, const std::string& backend);
// Every row at a precision other than fp32 against the same model, views and size at fp32 in this run.
void print_precision_ratios(const std::vector<Row>& rows);

}  // namespace lact::bench
