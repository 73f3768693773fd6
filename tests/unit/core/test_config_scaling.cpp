// Config scaling for the bench (core/config_scaling.h) against configs written out by hand: the paper's config
// scaled to other layers and widths (heads of 64 where the width allows, one fast-weight head), and the
// full-attention baseline in place of the TTT layer.
#include <gtest/gtest.h>

#include "core/config_scaling.h"
#include "core/kinds/attention_kind.h"
#include "core/kinds/ttt_kind.h"
#include "system/error.h"
#include "tests/common/small_models.h"

namespace lact {
namespace {

// The module list of the paper's config at width `dim`, written out: window attention with heads of
// `attention_head`, the TTT layer (one head of `dim`, hidden 2 x dim, 5 Newton-Schulz steps), the MLP (4 x dim).
void expect_paper_block(const ModelConfig& c, int dim, int attention_head) {
  ASSERT_EQ(c.block.size(), 3u);
  EXPECT_EQ(c.dim, dim);
  EXPECT_EQ(c.patch_size, 8);
  EXPECT_STREQ(c.block[0].kind->class_name(), "SelfAttention");
  EXPECT_EQ(c.block[0].length_dim, "l");
  EXPECT_EQ(c.block[0].params_as<AttentionParams>().head_dim, attention_head);
  EXPECT_EQ(c.block[0].heads(dim), dim / attention_head);
  EXPECT_STREQ(c.block[1].kind->class_name(), "FastWeightGluMLPMultihead");
  EXPECT_EQ(c.block[1].params_as<TttParams>().head_dim, dim);
  EXPECT_EQ(c.block[1].heads(dim), 1);
  EXPECT_EQ(c.block[1].hidden(dim), 2 * dim);
  EXPECT_EQ(c.block[1].params_as<TttParams>().muon_update_steps, 5);
  EXPECT_DOUBLE_EQ(c.block[1].params_as<TttParams>().base_lr, 0.01);
  EXPECT_STREQ(c.block[2].kind->class_name(), "MLP");
  EXPECT_EQ(c.block[2].hidden(dim), 4 * dim);
  EXPECT_EQ(c.source["dim"], dim);  // what a saved model carries
}

TEST(ConfigScaling, ScaledToLayersAndWidth) {
  const ModelConfig paper = builtin_model_config("lact_l24_d768_ttt2x");
  const ModelConfig small = scaled_config(paper, 2, 64);
  EXPECT_EQ(small.layers, 2);
  expect_paper_block(small, 64, 64);
  // A width 64 does not divide: one attention head of the whole width.
  const ModelConfig odd = scaled_config(paper, 3, 96);
  EXPECT_EQ(odd.layers, 3);
  expect_paper_block(odd, 96, 96);
  // 0 keeps the config's own.
  const ModelConfig wide = scaled_config(paper, 0, 256);
  EXPECT_EQ(wide.layers, 24);
  expect_paper_block(wide, 256, 64);
  const ModelConfig shallow = scaled_config(paper, 6, 0);
  EXPECT_EQ(shallow.layers, 6);
  expect_paper_block(shallow, 768, 64);
  EXPECT_EQ(scaled_config(paper, 0, 0).source, paper.source);
}

TEST(ConfigScaling, KeepsTheTttVariant) {
  // V3 is straight_qk: inter_multi 1 (hidden = head_dim), only W1 in the state.
  const ModelConfig v3 = scaled_config(builtin_model_config("lact_l24_d768_ttt2x:v3"), 2, 64);
  EXPECT_EQ(v3.ttt_variant().label(), "v3");
  EXPECT_EQ(v3.block[1].params_as<TttParams>().head_dim, 64);
  EXPECT_EQ(v3.block[1].hidden(64), 64);
  EXPECT_EQ(v3.state_floats_per_layer(1000), 64 * 64);
}

TEST(ConfigScaling, FullAttentionInPlaceOfTtt) {
  // tests/common/small_models.h writes both out: the TTT config and its full-attention twin (heads of 16 throughout).
  const ModelConfig full = with_full_attention(test::small_config(false, 2));
  EXPECT_EQ(full.source, test::small_config(true, 2).source);
  ASSERT_EQ(full.block.size(), 3u);
  EXPECT_STREQ(full.block[1].kind->class_name(), "GlobalAttention");
  EXPECT_EQ(full.block[1].length_dim, "vl");
  EXPECT_EQ(full.block[1].params_as<AttentionParams>().head_dim, 16);
  EXPECT_TRUE(full.block[1].params_as<AttentionParams>().use_qk_norm);
  for (const ModuleConfig& m : full.block) EXPECT_FALSE(m.has_params<TttParams>());
  // The state is the KV cache: keys and values of every input token, 4 heads of 16.
  EXPECT_EQ(full.state_floats_per_layer(1000), 2LL * 4 * 1000 * 16);
  // The paper's config scaled: heads of 64 from its window attention.
  const ModelConfig paper_full =
      with_full_attention(scaled_config(builtin_model_config("lact_l24_d768_ttt2x"), 2, 128));
  EXPECT_EQ(paper_full.layers, 2);
  EXPECT_STREQ(paper_full.block[1].kind->class_name(), "GlobalAttention");
  EXPECT_EQ(paper_full.block[1].params_as<AttentionParams>().head_dim, 64);
  EXPECT_EQ(paper_full.state_floats_per_layer(10), 2LL * 10 * 128);
  // Nothing to replace: the same config.
  EXPECT_EQ(with_full_attention(full).source, full.source);
}

TEST(ConfigScaling, FullAttentionNeedsAHeadSize) {
  nlohmann::json json = test::small_config(false, 2).source;
  json["block_config"].erase(0);  // the TTT layer and the MLP: no attention module to copy heads from
  EXPECT_THROW(with_full_attention(parse_model_config(json, "test config")), Error);
}

}  // namespace
}  // namespace lact
