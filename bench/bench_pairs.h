// LaCT and full attention timed side by side in one `lact bench` run: which rows pair up (the same precision,
// views and size), their ratios where the timings can be trusted, and where LaCT's encode overtakes full
// attention's as the input tokens grow. The table, the CSV and the crossover lines all read them from here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/bench_row.h"

namespace lact::bench {

// Whether two rows are timed at one point: the same precision, views and size (of any model).
bool same_point(const Row& a, const Row& b);

// The timed (not skipped) row of `model` at `at`'s precision, views and size; nullptr when there is none.
const Row* timed_partner(const std::vector<Row>& rows, const Row& at, const std::string& model);

// Full attention's row against LaCT's: full/LaCT encode seconds and LaCT/full render FPS (both "how many times
// faster LaCT is"), each empty where the two timings spread too wide to trust (untrusted_ratio), with the reason.
struct PairRatios {
  std::optional<double> encode, render;
  std::string encode_why, render_why;
};
PairRatios pair_ratios(const Row& full, const Row& lact);

// One line per precision and size at which both models were timed: between which input token counts LaCT's
// encode became the faster one, or that it was faster (slower) at every timed count, or why that is not stated
// (a ratio not trusted, or one that crosses 1 more than once).
std::vector<std::string> encode_crossover_lines(const std::vector<Row>& rows);

}  // namespace lact::bench
