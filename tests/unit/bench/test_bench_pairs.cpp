// lact bench compares LaCT with full attention only at the same precision, views and size, states a ratio (in the
// table and the CSV alike) only from timings it can trust, and says between which token counts LaCT's encode
// overtakes full attention's: made-up rows with timings worked out by hand.
#include <gtest/gtest.h>

#include <sstream>

#include "bench/bench_files.h"
#include "bench/bench_pairs.h"
#include "bench/bench_tables.h"

namespace lact::bench {
namespace {

// A timed row whose encode and render timings are all exactly `encode_s` and `render_s` (spread 0), or spread
// by `spread` of the median around it.
Row timed(const std::string& model, const std::string& precision, int views, int side, double encode_s, double render_s,
          double spread = 0) {
  Row r;
  r.model = model, r.precision = precision, r.views = views, r.height = r.width = side;
  r.tokens = static_cast<int64_t>(views) * (side / 8) * (side / 8);
  r.encode.values = {encode_s * (1 - spread / 2), encode_s, encode_s * (1 + spread / 2)};
  r.render.values = {render_s * (1 - spread / 2), render_s, render_s * (1 + spread / 2)};
  r.encode_s = encode_s, r.render_fps = 1.0 / render_s, r.state_mib = model == "lact" ? 9 : views * 3.0;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// fp32 and bf16 passes of one run (--precision bf16 times fp32 first): each model's bf16 row is twice as fast.
std::vector<Row> two_precisions() {
  return {timed("lact", "fp32", 8, 128, 0.4, 0.02), timed("full", "fp32", 8, 128, 0.8, 0.05),
          timed("lact", "bf16", 8, 128, 0.2, 0.01), timed("full", "bf16", 8, 128, 0.4, 0.025)};
}

TEST(BenchPairs, RowsPairAtTheSamePrecision) {
  const std::vector<Row> rows = two_precisions();
  EXPECT_EQ(timed_partner(rows, rows[1], "lact"), &rows[0]);
  EXPECT_EQ(timed_partner(rows, rows[3], "lact"), &rows[2]);
  // full/LaCT 0.8 / 0.4 and 0.4 / 0.2: 2x at both precisions (fp32 full against bf16 LaCT would read 4x).
  EXPECT_DOUBLE_EQ(*pair_ratios(rows[1], rows[0]).encode, 2.0);
  EXPECT_DOUBLE_EQ(*pair_ratios(rows[1], rows[0]).render, 2.5);  // 50 / 20 FPS
  const std::vector<std::string> csv = lines_of(bench_csv(rows));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_EQ(csv[0],
            "precision,views,height,width,tokens,lact_encode_s,full_encode_s,encode_ratio_full_over_lact,"
            "lact_render_fps,full_render_fps,render_ratio_lact_over_full,lact_state_mib,full_state_mib,"
            "lact_encode_spread,full_encode_spread,lact_render_spread,full_render_spread");
  EXPECT_EQ(csv[1], "fp32,8,128,128,2048,0.4,0.8,2,50,20,2.5,9,24,0,0,0,0");
  EXPECT_EQ(csv[2], "bf16,8,128,128,2048,0.2,0.4,2,100,40,2.5,9,24,0,0,0,0");
}

TEST(BenchPairs, TheTableComparesEachPrecisionWithItself) {
  testing::internal::CaptureStdout();
  print_table(two_precisions());
  const std::string table = testing::internal::GetCapturedStdout();
  int full_rows = 0;
  for (const std::string& line : lines_of(table))
    if (line.rfind("| full |", 0) == 0) {
      ++full_rows;
      EXPECT_NE(line.find("| 2.00x | 2.50x |"), std::string::npos) << line;
    }
  EXPECT_EQ(full_rows, 2);
  EXPECT_NE(table.find("Encode crossover, fp32 128x128: LaCT encoded faster at every timed count, from 2048 tokens"),
            std::string::npos)
      << table;
}

TEST(BenchPairs, TheTableKeepsSmallValuesReadable) {
  // The fixture's size: a 0.46 ms encode and a 0.047 MiB KV cache (2 views of 32x32) read 0.000 s and 0.0 MiB.
  Row full = timed("full", "fp32", 2, 32, 0.000461372, 0.0004);
  full.state_mib = 0.046875, full.first_frame.values = {0.0008};
  testing::internal::CaptureStdout();
  print_table({full});
  const std::string table = testing::internal::GetCapturedStdout();
  EXPECT_NE(
      table.find("| full | fp32 | 2 | 32x32 | 32 | - | 0.000461 | 0.000461 | 0% | 2500.00 | 0% | 0.0008 | 0.0469 |"),
      std::string::npos)
      << table;
}

TEST(BenchPairs, TheCsvLeavesOutWhatTheTableDoesNotState) {
  // LaCT's encode runs spread 40% (0.8 to 1.2 s around 1 s): the ratio is not stated; the render's 0% is.
  Row lact = timed("lact", "fp32", 2, 64, 1.0, 0.02), full = timed("full", "fp32", 2, 64, 0.5, 0.04);
  lact.encode.values = {0.8, 1.0, 1.2};
  const std::vector<std::string> csv = lines_of(bench_csv({lact, full}));
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[1], "fp32,2,64,64,128,1,0.5,,50,25,2,9,6,0.4,0,0,0");
  // Full attention alone (--models full) still writes its lines.
  const std::vector<std::string> alone = lines_of(bench_csv({full}));
  ASSERT_EQ(alone.size(), 2u);
  EXPECT_EQ(alone[1], "fp32,2,64,64,128,,0.5,,,25,,,6,,0,,0");
  // A sub-millisecond encode keeps six significant digits (six decimal places kept three of them).
  const std::vector<std::string> fast = lines_of(bench_csv({timed("full", "fp32", 2, 64, 0.000461372, 0.04)}));
  EXPECT_EQ(fast[1].rfind("fp32,2,64,64,128,,0.000461372,", 0), 0u) << fast[1];
}

// docs/bench/bench_cpu_l6_d256.md's encode times (6 layers, dim 256, 128x128): full/LaCT 0.43x, 0.73x at 2 and 4
// views, 1.22x, 2.19x at 8 and 16.
std::vector<Row> documented_sweep() {
  const int views[] = {2, 4, 8, 16};
  const double lact_s[] = {0.174407, 0.264414, 0.454536, 0.812796}, full_s[] = {0.075328, 0.192859, 0.554066, 1.780411};
  std::vector<Row> rows;
  for (int i = 3; i >= 0; --i)  // out of order, as --views 16,8,4,2 runs them
    rows.push_back(timed("lact", "fp32", views[i], 128, lact_s[i], 0.03)),
        rows.push_back(timed("full", "fp32", views[i], 128, full_s[i], 0.05));
  return rows;
}

TEST(BenchPairs, TheCrossoverIsBracketedByTheTimedTokenCounts) {
  std::vector<Row> rows = documented_sweep();
  EXPECT_EQ(encode_crossover_lines(rows),
            std::vector<std::string>{"Encode crossover, fp32 128x128: LaCT overtakes full attention between 1024 "
                                     "tokens (4 views; full/LaCT 0.73x) and 2048 tokens (8 views; full/LaCT 1.22x)"});
  // Only the two smallest counts: the crossover lies above the largest.
  const std::vector<Row> small(rows.begin() + 4, rows.end());
  EXPECT_EQ(encode_crossover_lines(small),
            std::vector<std::string>{"Encode crossover, fp32 128x128: full attention encoded faster at every timed "
                                     "count, up to 1024 tokens (4 views; full/LaCT 0.73x): the crossover lies above"});
  // A ratio that went back under 1 at a larger count (a busy machine) is no crossover.
  rows[1] = timed("full", "fp32", 16, 128, 0.7, 0.05);
  const std::vector<std::string> twice = encode_crossover_lines(rows);
  ASSERT_EQ(twice.size(), 1u);
  EXPECT_NE(twice[0].find("not stated: the ratio crosses 1 more than once"), std::string::npos) << twice[0];
}

TEST(BenchPairs, NoCrossoverFromTimingsSpreadTooWide) {
  std::vector<Row> rows = documented_sweep();
  rows[2] = timed("lact", "fp32", 8, 128, 0.454536, 0.03, 0.5);
  EXPECT_EQ(encode_crossover_lines(rows),
            std::vector<std::string>{"Encode crossover, fp32 128x128: not stated: the encode ratio at 2048 tokens "
                                     "spread too wide to trust (the table says why)"});
  // LaCT alone: nothing to compare.
  EXPECT_TRUE(encode_crossover_lines({timed("lact", "fp32", 2, 64, 1.0, 0.02)}).empty());
}

TEST(BenchPairs, PrecisionRatiosCompareTheSameSize) {
  // 128x128 and 128x256 at fp32, 128x256 at bf16: the bf16 row has one fp32 row to compare with.
  Row wide_fp32 = timed("lact", "fp32", 2, 128, 0.8, 0.04), wide_bf16 = timed("lact", "bf16", 2, 128, 0.4, 0.02);
  wide_fp32.width = wide_bf16.width = 256;
  testing::internal::CaptureStdout();
  print_precision_ratios({timed("lact", "fp32", 2, 128, 0.5, 0.03), wide_fp32, wide_bf16});
  const std::vector<std::string> lines = lines_of(testing::internal::GetCapturedStdout());
  ASSERT_EQ(lines.size(), 3u);  // a blank line, the heading, one comparison
  EXPECT_EQ(lines[2], "  lact 2 views 128x256 at bf16: encode 2.00x, render 2.00x the speed at fp32");
}

}  // namespace
}  // namespace lact::bench
