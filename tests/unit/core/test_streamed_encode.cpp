// The streamed encode (Model::encode with chunk_views): the views taken in chunks of whole views within each
// layer must leave the state the unchunked encode leaves, within 1e-5 (of the largest value) in fp32, and the same
// residual stream after every layer, for the baseline TTT layer and the W1-only variants (SwiGLU and straight phi),
// with token tiles that split a chunk; full attention, which cannot stream, ignores the chunk. The estimate of a
// streamed encode covers its measured peak and is below the unchunked one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/memory_estimate.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::random_views;
using test::small_config;

struct Encoded {
  SceneState state;
  std::map<std::string, std::vector<float>> layers;  // the residual stream after each layer
  int64_t peak = 0;                                  // the backend's peak of tensors during the encode
};

Encoded encode(Backend& be, const Model& model, const std::vector<PosedImage>& views, int64_t chunk) {
  Encoded e;
  const int64_t before = be.allocated_memory();
  be.reset_peak_memory();
  e.state = model.encode(
      views,
      [&](const std::string& name, const Tensor& value) {
        if (name.rfind("encode_block", 0) == 0) e.layers[name] = be.to_host(value);
      },
      nullptr, chunk);
  e.peak = be.peak_memory() - before;
  return e;
}

// The largest difference relative to the largest magnitude of a (the summation order differs between chunks
// and tiles; Newton-Schulz carries float rounding along).
double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double most = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    most = std::max(most, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(a[i])));
  }
  return most / std::max(scale, 1e-30);
}

TEST(StreamedEncode, SameStateAsAllViewsAtOnce) {
  struct Case {
    const char* variant;
    bool full_attention;
    int64_t token_tile;  // 24: one view's tokens, 48: two
  };
  for (const Case& c : {Case{"baseline", false, 24}, Case{"baseline", false, 48}, Case{"v1", false, 48},
                        Case{"v2", false, 24}, Case{"v3", false, 48}, Case{"v6", false, 16384},
                        Case{"baseline", false, 16384}, Case{"baseline", true, 16384}}) {
    SCOPED_TRACE(std::string(c.variant) + (c.full_attention ? " full attention" : "") + " tile " +
                 std::to_string(c.token_tile));
    auto be = make_cpu_backend(2);
    const ModelConfig base = small_config(c.full_attention, 2);
    const ModelConfig config = c.full_attention ? base : with_ttt_variant(base, c.variant, "test config");
    ModelOptions options;
    options.token_tile = c.token_tile;
    options.newton_schulz = NewtonSchulzRoute::Dense;  // the low-rank route keeps every token and does not stream
    const Model model(random_model_weights(config, *be, 11), *be, options);
    const int views = 5, height = 32, width = 48;  // 24 tokens a view
    const int64_t tile_views = update_tile_views(options, 24);
    const auto inputs = random_views(views, height, width);
    const Encoded whole = encode(*be, model, inputs, 0);
    for (int64_t chunk : {1, 2, 3}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk));
      const int64_t taken = model.encode_chunk(views, views, height, width, chunk);
      EXPECT_EQ(taken, c.full_attention ? views : chunk >= tile_views ? chunk / tile_views * tile_views : chunk);
      // Chunks of whole update tiles sum what all the views at once sum; a chunk smaller than a tile sums in
      // another order, and Newton-Schulz carries that rounding into the state (about 2e-5 here, no more).
      const double bound = taken % tile_views == 0 || taken == views ? 1e-5 : 1e-4;
      const Encoded part = encode(*be, model, inputs, chunk);
      ASSERT_EQ(part.state.modules.size(), whole.state.modules.size());
      double most = 0;
      for (size_t m = 0; m < whole.state.modules.size(); ++m)
        for (size_t t = 0; t < whole.state.modules[m].tensors.size(); ++t) {
          const Tensor& a = whole.state.modules[m].tensors[t].second;
          const Tensor& b = part.state.modules[m].tensors.at(t).second;
          EXPECT_EQ(a.shape(), b.shape());
          const double difference = largest_difference(be->to_host(a), be->to_host(b));
          EXPECT_LE(difference, bound) << "module " << m << " tensor " << t;
          most = std::max(most, difference);
        }
      std::printf("%s%s tile %lld, chunk %lld (taken %lld): state within %.2e (bound %.0e)\n", c.variant,
                  c.full_attention ? " full attention" : "", (long long)c.token_tile, (long long)chunk,
                  (long long)taken, most, bound);
      for (const auto& [name, values] : whole.layers)
        EXPECT_LE(largest_difference(values, part.layers.at(name)), bound) << name;
      const EncodeMemory estimate = estimate_encode_memory(config, options, views, height, width, -1, taken);
      EXPECT_GE(estimate.total(), part.peak);
      if (!c.full_attention) {
        EXPECT_LT(part.peak, whole.peak);
        EXPECT_LT(estimate.total(), estimate_encode_memory(config, options, views, height, width).total());
      }
    }
  }
}

}  // namespace
}  // namespace lact
