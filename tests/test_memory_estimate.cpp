// The encode memory estimate (core/memory_estimate.h) against the peak the CPU backend measures (every
// tensor it allocates is counted), for LaCT and full-attention configs, both Newton-Schulz routes and
// token tiles that split the views: the estimate must cover the peak, and not by more than 1.6x (so that
// it does not refuse scenes that fit). Also the one-line refusal.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/memory_estimate.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "tests/small_models.h"
#include "tests/test_util.h"

namespace lact {
namespace {

using test::random_views;
using test::small_config;

TEST(MemoryEstimate, CoversTheMeasuredPeakWithoutOverstating) {
  struct Case {
    bool full_attention;
    int inter_multi, views, height, width;
    int64_t token_tile;
    NewtonSchulzRoute route;
    const char* variant = "baseline";
  };
  for (const Case& c : {Case{false, 2, 4, 32, 32, 16384, NewtonSchulzRoute::Auto},
                        Case{false, 4, 3, 32, 48, 40, NewtonSchulzRoute::Dense},
                        Case{false, 1, 6, 16, 16, 16384, NewtonSchulzRoute::LowRank},
                        Case{true, 2, 5, 32, 32, 16384, NewtonSchulzRoute::Auto},
                        Case{false, 2, 4, 32, 32, 16384, NewtonSchulzRoute::Auto, "v1"},
                        Case{false, 4, 3, 32, 48, 40, NewtonSchulzRoute::Dense, "v2"},
                        Case{false, 2, 1, 16, 16, 16384, NewtonSchulzRoute::LowRank, "v2"},
                        Case{false, 1, 4, 32, 32, 40, NewtonSchulzRoute::Auto, "v3"},
                        Case{false, 1, 5, 32, 32, 16384, NewtonSchulzRoute::Auto, "v6"}}) {
    SCOPED_TRACE(c.variant);
    auto be = make_cpu_backend(2);
    const ModelConfig base = small_config(c.full_attention, c.inter_multi);
    const ModelConfig config = c.full_attention ? base : with_ttt_variant(base, c.variant, "test config");
    ModelOptions options;
    options.token_tile = c.token_tile;
    options.newton_schulz = c.route;
    const Model model(random_model_weights(config, *be, 7), *be, options);
    const auto views = random_views(c.views, c.height, c.width);
    const int64_t before = be->allocated_memory();
    be->reset_peak_memory();
    const SceneState state = model.encode(views);
    const int64_t measured = be->peak_memory() - before;
    const EncodeMemory estimate = estimate_encode_memory(config, options, c.views, c.height, c.width);
    EXPECT_GE(estimate.total(), measured) << "full attention " << c.full_attention << " tile " << c.token_tile;
    EXPECT_LE(double(estimate.total()), 1.6 * double(measured)) << "full attention " << c.full_attention;
    std::printf("%s %s inter %d, %d views %dx%d, tile %lld: measured peak %lld B, estimate %lld B (%.2fx)\n",
                c.full_attention ? "full attention" : "lact", c.variant, c.inter_multi, c.views, c.height, c.width,
                (long long)c.token_tile, (long long)measured, (long long)estimate.total(),
                double(estimate.total()) / double(measured));
  }
}

TEST(MemoryEstimate, RefusesWithOneLineNamingBothNumbers) {
  const ModelConfig config = builtin_model_config("lact_l24_d768_ttt2x");
  const EncodeMemory need = estimate_encode_memory(config, ModelOptions{}, 48, 512, 512);
  EXPECT_EQ(need.tokens, 48 * 64 * 64);
  try {
    check_encode_fits(need, need.total() / 2, "a small GPU");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_NE(what.find("GiB"), std::string::npos);
    EXPECT_NE(what.find("a small GPU"), std::string::npos);
    std::printf("%s\n", what.c_str());
  }
  EXPECT_NO_THROW(check_encode_fits(need, need.total(), "enough"));
  EXPECT_NO_THROW(check_encode_fits(need, -1, "unknown"));
}

}  // namespace
}  // namespace lact
