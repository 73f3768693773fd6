// lact bench states a ratio, and draws its plot, only from timings whose spread it can trust (bench/bench_row.h):
// made-up timings, as a quiet and a busy machine give them.
#include <gtest/gtest.h>

#include "bench/bench_row.h"

namespace lact::bench {
namespace {

Samples samples(std::vector<double> values) {
  Samples s;
  s.values = std::move(values);
  return s;
}

TEST(BenchTrust, RatiosOfTightTimingsAreStated) {
  // A quiet machine: 1-3% spreads (docs/bench/bench_cpu_precision.md's runs).
  EXPECT_EQ(untrusted_ratio(samples({3.27, 3.26, 3.30}), "full encode", samples({1.96, 1.94, 1.99}), "LaCT encode"),
            "");
  // One sample each: no spread to judge by; stated.
  EXPECT_EQ(untrusted_ratio(samples({2.0}), "a", samples({1.0}), "b"), "");
}

TEST(BenchTrust, RatiosOfWideTimingsAreRefusedSayingWhy) {
  // A busy machine: one run took four times the others.
  const std::string why =
      untrusted_ratio(samples({1.0, 1.1, 4.0}), "LaCT encode", samples({2.0, 2.02, 2.04}), "full encode");
  EXPECT_EQ(why, "LaCT encode spread 273%, full encode spread 2%: together over 25%");
  // Two spreads each within the bound, together over it.
  EXPECT_NE(untrusted_ratio(samples({1.0, 1.15}), "a", samples({1.0, 1.15}), "b"), "");
  EXPECT_EQ(untrusted_ratio(samples({}), "a", samples({1.0}), "b"), "a or b was not timed");
}

TEST(BenchTrust, APlotNeedsEveryRowTight) {
  Row tight, wide, skipped;
  tight.model = wide.model = "lact", tight.precision = wide.precision = "fp32";
  tight.views = wide.views = 2, tight.height = tight.width = wide.height = wide.width = 128;
  tight.encode = samples({1.0, 1.01}), tight.render = samples({0.5, 0.51});
  wide.encode = samples({1.0, 1.01}), wide.render = samples({0.5, 1.5});
  skipped.skipped = "predicted encode 900 s > --max-seconds";  // no timings: not judged
  EXPECT_EQ(untrusted_rows({tight, skipped}), "");
  EXPECT_EQ(untrusted_rows({tight, wide}), "lact fp32 2 views 128x128: render spread 100%, over 25%");
}

}  // namespace
}  // namespace lact::bench
