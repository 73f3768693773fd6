// `lact bench --reference`: the PyTorch reference (tools/reference/bench_reference.py) timed in the same run.
#pragma once

#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_row.h"
#include "core/config.h"

namespace lact::bench {

// The reference (fp32, the official code's own precision on the CPU) of the same model (`lact`, the config the
// LaCT rows ran) at the first LaCT row's views and size, against every LaCT row of that size timed in this run
// (one per precision), as one table with the speed-ups. Error when no LaCT row ran.
void run_reference(const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows);

}  // namespace lact::bench
