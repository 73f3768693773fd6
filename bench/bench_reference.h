// `lact bench --reference`: the PyTorch reference (tools/reference/bench_reference.py) timed in the same run.
#pragma once

#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_row.h"

namespace lact::bench {

// The reference (fp32, the official code's own precision on the CPU) at the first LaCT row's views and size,
// against every LaCT row of that size timed in this run (one per precision). Error when no LaCT row ran.
void run_reference(const BenchOptions& o, const std::vector<Row>& rows);

}  // namespace lact::bench
