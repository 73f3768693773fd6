// The paper's theorem in lact's own code (Liu et al. 2026, Theorem 5.1): for every variant that updates W1
// alone, the state the linear-attention form builds, S = W1 + NS(phi(K)^T diag(eta) V), is the state of the
// inner loss's gradient step as the authors' code takes it (the baseline's whole inner forward and backward
// for a SwiGLU phi), and the images rendered from both are the same. And the reduction splits exactly: partial
// sums over halves of the views, Newton-Schulz once on the total, give the one-pass state; for V6 (plain
// linear attention) the states of two halves themselves add up.
#include <gtest/gtest.h>

#include "core/layers.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

ModelConfig small_config(const std::string& variant) {
  return with_ttt_variant(test::small_config(false, 2, 2), variant, "test config");
}

std::vector<PosedImage> random_views(int views, int height, int width, int seed) {
  return test::random_views(views, height, width, static_cast<unsigned>(seed));
}

const char* const kW1Variants[] = {"v1",
                                   "v2",
                                   "v3",
                                   "v4",
                                   "v6",
                                   "only_w1_straight_qk",
                                   "only_w1_straight_qk_no_lr1",
                                   "only_w1_straight_qk_no_lr1_no_muon"};

TEST(LinearAttentionForm, IsTheGradientStepForEveryVariant) {
  auto be = make_cpu_backend(2);
  const auto views = random_views(3, 16, 24, 10);
  std::vector<Camera> targets = {views[0].camera, views[2].camera};
  targets[0].c2w[3] += 0.2, targets[1].c2w[7] -= 0.3;
  for (const char* variant : kW1Variants) {
    SCOPED_TRACE(variant);
    const ModelConfig config = small_config(variant);
    ModelOptions gradient_step;
    gradient_step.ttt_update_form = TttUpdateForm::GradientStep;
    gradient_step.token_tile = 8;  // the gradient step in tiles that split views, the other form in one pass
    const Model linear_attention(random_model_weights(config, *be, 5), *be);
    const Model gradient(random_model_weights(config, *be, 5), *be, gradient_step);
    const SceneState a = linear_attention.encode(views), b = gradient.encode(views);
    ASSERT_EQ(a.modules.size(), 2u);
    double worst_state = 0, worst_pixel = 0;
    for (size_t layer = 0; layer < a.modules.size(); ++layer) {
      ASSERT_EQ(a.modules[layer].tensors.size(), 1u);  // the state is W1 alone
      const auto s = be->to_host(a.modules[layer].at("w1")), t = be->to_host(b.modules[layer].at("w1"));
      worst_state = std::max(worst_state, test::relative_error(s, t));
      // And the update changed W1 (the comparison is not of two copies of the initial weights).
      EXPECT_GT(test::relative_error(s, be->to_host(linear_attention.weights().blocks[layer][1].as<TttWeights>().w1)),
                1e-3);
    }
    const auto x = linear_attention.render(a, targets), y = gradient.render(b, targets);
    for (size_t v = 0; v < x.size(); ++v) worst_pixel = std::max(worst_pixel, test::max_abs_error(x[v].rgb, y[v].rgb));
    EXPECT_LT(worst_state, 1e-5);
    EXPECT_LT(worst_pixel, 1e-5);
    std::printf("%-36s state rel err %.2e, render max abs %.2e\n", variant, worst_state, worst_pixel);
  }
}

// One layer's reduction over two halves of the views (tokens view-major), against one pass.
TEST(LinearAttentionForm, SplitsExactlyOverViews) {
  auto be = make_cpu_backend(2);
  for (const char* variant : {"v2", "v3", "v6"}) {
    SCOPED_TRACE(variant);
    const ModelConfig config = small_config(variant);
    const ModelWeights weights = random_model_weights(config, *be, 9);
    const TttParams& mc = config.block[1].params_as<TttParams>();
    const TttWeights& mw = weights.blocks[0][1].as<TttWeights>();
    const int64_t per_view = 12, views = 4, tokens = per_view * views;
    const auto values = test::random_values(size_t(tokens) * config.dim, 3, 1.0f);
    const Tensor y = be->from_host({tokens, config.dim}, values.data());
    const TttProjections p = ttt_project(*be, mc, mw, y, true);
    const Tensor one_pass = ttt_update_w1(*be, mc, mw, p, ModelOptions{});

    const int64_t half = 2 * per_view;
    Tensor first = be->zeros(mw.w1.shape()), second = be->zeros(mw.w1.shape());
    ttt_accumulate_w1(*be, mc, mw, p, 0, half, first);
    ttt_accumulate_w1(*be, mc, mw, p, half, tokens, second);
    Tensor total = be->empty(first.shape());
    be->copy(total, first);
    be->add(total, second);
    const double split = test::relative_error(be->to_host(ttt_finish_w1(*be, mc, mw, total)), be->to_host(one_pass));
    EXPECT_LT(split, 1e-6);
    std::printf("%s: partial sums over two halves of the views, Newton-Schulz once: rel err %.2e\n", variant, split);
    if (std::string(variant) != "v6") continue;
    // V6: S = W1 + K^T V, so S_first + S_second - W1 is the one-pass state.
    Tensor s = ttt_finish_w1(*be, mc, mw, first);
    be->add(s, ttt_finish_w1(*be, mc, mw, second));
    be->axpby(s, -1.0f, mw.w1, 1.0f);
    const double summed = test::relative_error(be->to_host(s), be->to_host(one_pass));
    EXPECT_LT(summed, 1e-6);
    std::printf("v6: the states of the two halves summed (minus one W1_0): rel err %.2e\n", summed);
  }
}

// The same through the whole model for V6, in the first layer: each half of the views encoded alone (its
// layer-0 keys and values are per view, so they are the same tokens), the two states summed minus W1_0.
// (Deeper layers see keys computed with the whole scene's earlier states, which is why only the reduction
// itself, not the encode of a view subset, splits there.)
TEST(LinearAttentionForm, V6StatesOfTwoHalvesOfTheViewsAddUp) {
  auto be = make_cpu_backend(2);
  const ModelConfig config = small_config("v6");
  const Model model(random_model_weights(config, *be, 21), *be);
  const auto views = random_views(4, 16, 16, 40);
  const SceneState all = model.encode(views);
  const SceneState a = model.encode({views[0], views[1]}), b = model.encode({views[2], views[3]});
  const auto w1 = be->to_host(model.weights().blocks[0][1].as<TttWeights>().w1);
  const auto sa = be->to_host(a.modules[0].at("w1")), sb = be->to_host(b.modules[0].at("w1"));
  std::vector<float> summed(w1.size());
  for (size_t i = 0; i < w1.size(); ++i) summed[i] = sa[i] + sb[i] - w1[i];
  const double err = test::relative_error(summed, be->to_host(all.modules[0].at("w1")));
  EXPECT_LT(err, 1e-6);
  EXPECT_GT(test::relative_error(sa, be->to_host(all.modules[0].at("w1"))), 1e-2);  // a half alone is not it
  std::printf("v6 layer 0: state(views 0-1) + state(views 2-3) - W1_0 vs state(all): rel err %.2e\n", err);
}

}  // namespace
}  // namespace lact
