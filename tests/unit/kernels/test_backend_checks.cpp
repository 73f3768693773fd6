// Backend's public ops check their operands before the backend's do_ hook runs: a backend that implements only
// the hooks and checks nothing itself (tests/common/hook_log_backend.h) still has every bad call refused, with the op's
// name, before its hook is reached; and the same op with good operands does reach that hook (so the refusal
// comes from the check, and each op calls its own hook).
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "tests/common/hook_log_backend.h"

namespace lact {
namespace {

using test::HookLogBackend;

// One op: a call with operands the op accepts and one with hand-written bad ones.
struct OpCase {
  std::string hook;  // what the hook logs
  std::string op;    // how the refusal starts ("" for empty, whose message names the shape)
  std::function<void()> good, bad;
};

class BackendChecks : public ::testing::Test {
 protected:
  HookLogBackend be, other;
  std::vector<float> host = std::vector<float>(64, 0.0f);
  // Tensors of `be`: a, a2 [2, 3]; c7 [7]; y [2, 3]; square [1, 2, 2]; w3 [3], w4 [4].
  Tensor a = be.empty({2, 3}), a2 = be.empty({2, 3}), c7 = be.empty({7}), y = be.empty({2, 3});
  Tensor square = be.empty({1, 2, 2}), w3 = be.empty({3}), w4 = be.empty({4});
  Tensor foreign = other.empty({2, 3});  // same shape, another backend
  // gemm: A = a [2, 3] x B [3, 2] -> C [2, 2]. scale_rows: [1, 2, 3].
  Tensor b = be.empty({3, 2}), c = be.empty({2, 2}), rows = be.empty({1, 2, 3});
  Tensor a16 = be.empty({2, 3}, DType::BF16), b16 = be.empty({3, 2}, DType::BF16), w23 = be.empty({2, 3});
  Tensor rows6 = be.empty({1, 2, 6});  // swiglu_backward_packed's gate_up for dhidden `rows`
  // Two heads of 2 from [1 view, 2 tokens, 4 channels]; attention of 2 queries over 3 keys of dim 4.
  Tensor src = be.empty({1, 2, 4}), heads = be.empty({1, 2, 2, 2}), merged = be.empty({1, 2, 4});
  Tensor q = be.empty({1, 2, 4}), k = be.empty({1, 3, 4}), v = be.empty({1, 3, 4}), out = be.empty({1, 2, 4});
  Tensor k_dim2 = be.empty({1, 3, 2});
  // The packed attention of 1 head of 2 over [1 view, 2 tokens, 6]: out [1, 2, 2].
  Tensor qkv = be.empty({1, 2, 6}), packed_out = be.empty({1, 2, 2});
  // One 2x2 view in one patch of 2: 48 token floats.
  std::vector<RayPose> poses = std::vector<RayPose>(1);
  Tensor tokens = be.empty({1, 48}), tokens47 = be.empty({1, 47});
  Tensor packed = be.empty({1, kRayPoseFloats}), packed_short = be.empty({1, kRayPoseFloats - 1});
  // column norms of w [1, 3, 2]: 2 of them.
  Tensor w = be.empty({1, 3, 2}), norms = be.empty({2}), norms3 = be.empty({3});
  // A 3x3 convolution of [1, 2, 5, 5] into 3 channels, stride 2 and padding 1: [1, 3, 3, 3]; pooled 3x3 stride 2
  // ([1, 2, 2, 2]).
  Tensor image = be.empty({1, 2, 5, 5}), kernel = be.empty({3, 2, 3, 3}), conv_bias = be.empty({3});
  Tensor conv_out = be.empty({1, 3, 3, 3}), pooled = be.empty({1, 2, 2, 2});

  // Every op's case, in the order of kernels/backend.h.
  std::vector<OpCase> all_cases() {
    std::vector<OpCase> cases;
    for (std::vector<OpCase> group : {memory_cases(), elementwise_cases(), layout_cases(), reduction_cases()})
      for (OpCase& c : group) cases.push_back(std::move(c));
    return cases;
  }
  std::vector<OpCase> memory_cases();
  std::vector<OpCase> elementwise_cases();
  std::vector<OpCase> layout_cases();
  std::vector<OpCase> reduction_cases();
};

std::vector<OpCase> BackendChecks::memory_cases() {
  return {
      {"empty", "",
       [this] {
         be.empty({2, 3});
       },
       [this] {
         be.empty({2, -1});
       }},
      {"upload", "upload", [this] { be.upload(a, host.data()); }, [this] { be.upload(foreign, host.data()); }},
      {"download", "download", [this] { be.download(a, host.data()); }, [this] { be.download(foreign, host.data()); }},
      {"copy", "copy", [this] { be.copy(a, a2); }, [this] { be.copy(a, c7); }},
      {"fill", "fill", [this] { be.fill(a, 1.0f); }, [this] { be.fill(foreign, 1.0f); }},
      {"copy_blocks", "copy_blocks", [this] { be.copy_blocks(host.data(), 4, host.data() + 32, 4, 3, 2); },
       [this] { be.copy_blocks(host.data(), 2, host.data() + 32, 2, 3, 2); }},
      // The bad product gives C a row stride of 1 for 2 columns.
      {"gemm", "gemm",
       [this] {
         be.gemm(false, false, 2, 2, 3, 1.0f, {a.data(), 3, 0}, {b.data(), 2, 0}, 0.0f, c.data(), 2, 0, 1);
       },
       [this] {
         be.gemm(false, false, 2, 2, 3, 1.0f, {a.data(), 3, 0}, {b.data(), 2, 0}, 0.0f, c.data(), 1, 0, 1);
       }},
      // The same on bf16 storage; the bad one gives A a row stride of 2 for 3 columns.
      {"gemm_bf16", "gemm",
       [this] {
         be.gemm_bf16(false, false, 2, 2, 3, 1.0f, {a16.raw(), 3, 0}, {b16.raw(), 2, 0}, 0.0f, c.raw(), DType::F32, 2,
                      0, 1);
       },
       [this] {
         be.gemm_bf16(false, false, 2, 2, 3, 1.0f, {a16.raw(), 2, 0}, {b16.raw(), 2, 0}, 0.0f, c.raw(), DType::F32, 2,
                      0, 1);
       }},
      // y [2, 2] = a16 [2, 3] W^T for W [2, 3]; the bad one's weight is bf16 (weights are float32).
      {"linear_bf16", "linear", [this] { be.linear_bf16(a16, w23, c); }, [this] { be.linear_bf16(a16, a16, c); }},
  };
}

std::vector<OpCase> BackendChecks::elementwise_cases() {
  return {
      {"add", "add", [this] { be.add(a, a2); }, [this] { be.add(a, c7); }},
      {"axpby", "axpby", [this] { be.axpby(a, 2.0f, a2, 1.0f); }, [this] { be.axpby(a, 2.0f, c7, 1.0f); }},
      {"add_scaled_identity", "add_scaled_identity", [this] { be.add_scaled_identity(square, 1.0f); },
       [this] { be.add_scaled_identity(a, 1.0f); }},
      {"silu", "silu", [this] { be.silu(a); }, [this] { be.silu(foreign); }},
      {"gelu", "gelu", [this] { be.gelu(a); }, [this] { be.gelu(foreign); }},
      {"sigmoid", "sigmoid", [this] { be.sigmoid(a); }, [this] { be.sigmoid(foreign); }},
      {"softplus", "softplus", [this] { be.softplus(a, 1.0f); }, [this] { be.softplus(foreign, 1.0f); }},
      {"add_bias", "add_bias", [this] { be.add_bias(a, w3); }, [this] { be.add_bias(a, w4); }},
      {"layer_norm", "layer_norm", [this] { be.layer_norm(a, w3, 1e-5f, y); },
       [this] { be.layer_norm(a, w4, 1e-5f, y); }},
      {"rms_norm", "rms_norm", [this] { be.rms_norm(a, w3, 3, 1e-5f, y); },
       [this] { be.rms_norm(a, w4, 3, 1e-5f, y); }},
      {"rms_norm_columns", "rms_norm_columns", [this] { be.rms_norm_columns(src, 0, 4, w4, 1e-5f); },
       [this] { be.rms_norm_columns(src, 2, 4, w4, 1e-5f); }},  // columns [2, 6) of rows of 4
      {"l2_normalize", "l2_normalize", [this] { be.l2_normalize(a, 3, 1e-5f); },
       [this] { be.l2_normalize(a, 4, 1e-5f); }},
      {"scale_rows", "scale_rows", [this] { be.scale_rows(rows, host.data(), 2, 1); },
       [this] { be.scale_rows(a, host.data(), 2, 1); }},  // not [batch, rows, cols]
  };
}

std::vector<OpCase> BackendChecks::layout_cases() {
  return {
      {"split_heads", "split_heads", [this] { be.split_heads(src, 0, 2, 2, heads); },
       [this] { be.split_heads(src, 0, 2, 2, c7); }},
      {"split_heads_silu", "split_heads_silu", [this] { be.split_heads_silu(src, 0, 2, 2, 1e-5f, heads); },
       [this] { be.split_heads_silu(src, 2, 2, 2, 1e-5f, heads); }},  // columns [2, 6) of rows of 4
      {"merge_heads", "merge_heads", [this] { be.merge_heads(heads, merged); }, [this] { be.merge_heads(heads, c7); }},
      {"attention", "attention", [this] { be.attention(q, k, v, 0.5f, out); },
       [this] { be.attention(q, k_dim2, v, 0.5f, out); }},
      {"attention_packed", "attention_packed", [this] { be.attention_packed(qkv, 1, 2, 0.5f, packed_out); },
       [this] { be.attention_packed(qkv, 2, 2, 0.5f, packed_out); }},  // 2 heads of 2 need rows of 12
      {"conv2d", "conv2d", [this] { be.conv2d(image, kernel, conv_bias, 2, 1, true, conv_out); },
       [this] { be.conv2d(image, kernel, conv_bias, 1, 1, true, conv_out); }},  // stride 1 makes [1, 3, 5, 5]
      {"max_pool2d", "max_pool2d", [this] { be.max_pool2d(image, 3, 2, pooled); },
       [this] { be.max_pool2d(image, 3, 1, pooled); }},
      {"ray_tokens(host poses)", "ray_tokens", [this] { be.ray_tokens(poses, nullptr, 2, 2, 2, tokens); },
       [this] { be.ray_tokens(poses, nullptr, 2, 2, 2, tokens47); }},
      {"ray_tokens(poses tensor)", "ray_tokens", [this] { be.ray_tokens(packed, 2, 2, 2, tokens); },
       [this] { be.ray_tokens(packed_short, 2, 2, 2, tokens); }},
  };
}

std::vector<OpCase> BackendChecks::reduction_cases() {
  return {
      {"swiglu", "swiglu", [this] { be.swiglu(a, a2, y); }, [this] { be.swiglu(a, c7, y); }},
      {"swiglu_backward", "swiglu_backward", [this] { be.swiglu_backward(a, a2, y); },
       [this] { be.swiglu_backward(a, c7, y); }},
      {"swiglu_backward_packed", "swiglu_backward_packed",
       [this] { be.swiglu_backward_packed(rows6, rows, host.data(), 1, 1, 3); },
       [this] { be.swiglu_backward_packed(rows, rows, host.data(), 1, 1, 3); }},  // gate_up not 2 cols wide
      {"swiglu_packed", "swiglu_packed", [this] { be.swiglu_packed(rows6); },
       [this] { be.swiglu_packed(a); }},  // not [batch, rows, 2 cols]
      {"batched_dot", "batched_dot", [this] { be.batched_dot(a, a2); }, [this] { be.batched_dot(a, c7); }},
      {"column_norms", "column_norms", [this] { be.column_norms(w, norms); }, [this] { be.column_norms(w, norms3); }},
      {"restore_column_norms", "restore_column_norms", [this] { be.restore_column_norms(w, norms, 1e-5f); },
       [this] { be.restore_column_norms(w, norms3, 1e-5f); }},
      {"scale_batched", "scale_batched",
       [this] {
         be.scale_batched(a, {1.0f, 2.0f});
       },
       [this] { be.scale_batched(a, {1.0f}); }},
  };
}

// The refusal's message, or "no error".
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(BackendChecks, EveryOpRefusesBadOperandsBeforeItsHookRuns) {
  const std::vector<OpCase> cases = all_cases();
  EXPECT_EQ(cases.size(), 39u);  // every hook of Backend (both ray_tokens)
  for (const OpCase& c : cases) {
    be.log.clear();
    const std::string message = refusal(c.bad);
    EXPECT_EQ(message.rfind(c.op.empty() ? "negative dimension" : c.op + ": ", 0), 0u) << c.hook << ": " << message;
    EXPECT_TRUE(be.log.empty()) << c.hook << ": the hook ran on bad operands";
    EXPECT_EQ(refusal(c.good), "no error") << c.hook;
    EXPECT_EQ(be.log, std::vector<std::string>{c.hook}) << c.hook << ": the good call did not reach its own hook";
  }
}

// Each way a convolution or a pooling can be malformed is refused on its own, by the op's name, before its hook.
TEST_F(BackendChecks, ConvolutionAndPoolingRefuseEachMalformedOperand) {
  Tensor flat = be.empty({2, 5, 5}), kernel_1ch = be.empty({3, 1, 3, 3}), big_kernel = be.empty({3, 2, 8, 8});
  Tensor bias4 = be.empty({4}), none;
  const std::vector<std::function<void()>> bad = {
      [&] { be.conv2d(flat, kernel, conv_bias, 2, 1, true, conv_out); },       // not NCHW
      [&] { be.conv2d(image, kernel_1ch, conv_bias, 2, 1, true, conv_out); },  // channels differ
      [&] { be.conv2d(image, kernel, conv_bias, 0, 1, true, conv_out); },      // stride 0
      [&] { be.conv2d(image, kernel, conv_bias, 2, -1, true, conv_out); },     // negative padding
      [&] { be.conv2d(image, big_kernel, conv_bias, 1, 1, true, conv_out); },  // kernel beyond the padded input
      [&] { be.conv2d(image, kernel, bias4, 2, 1, true, conv_out); },          // a bias per channel, not 4
      [&] { be.conv2d(image, kernel, conv_bias, 2, 1, true, image); },         // the output shape
      [&] { be.conv2d(image, kernel, conv_bias, 2, 1, false, foreign); },      // another backend's output
      [&] { be.max_pool2d(flat, 3, 2, pooled); },                              // not NCHW
      [&] { be.max_pool2d(image, 0, 2, pooled); },                             // no window
      [&] { be.max_pool2d(image, 6, 2, pooled); },                             // window beyond the input
      [&] { be.max_pool2d(image, 3, 2, conv_out); },                           // the output shape
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    be.log.clear();
    const std::string message = refusal(bad[i]);
    const std::string op = i < 8 ? "conv2d: " : "max_pool2d: ";
    EXPECT_EQ(message.rfind(op, 0), 0u) << "case " << i << ": " << message;
    EXPECT_TRUE(be.log.empty()) << "case " << i << ": the hook ran";
  }
  be.log.clear();  // no bias is a good call
  EXPECT_EQ(refusal([&] { be.conv2d(image, kernel, none, 2, 1, false, conv_out); }), "no error");
  EXPECT_EQ(be.log, std::vector<std::string>{"conv2d"});
}

// The fused heads op: each malformed operand refused on its own, by the op's name, before its hook; dst may be of
// the other storage type, not overlap src.
TEST_F(BackendChecks, SplitHeadsSiluRefusesEachMalformedOperand) {
  Tensor src16 = be.empty({1, 2, 4}, DType::BF16), heads16 = be.empty({1, 2, 2, 2}, DType::BF16);
  Tensor flat = be.empty({2, 4}), inside = src.reshape({8}).slice(0, 4).reshape({1, 1, 2, 2});
  Tensor one_head = be.empty({1, 1, 2, 2}), foreign3 = foreign.reshape({1, 2, 3}), heads3 = a.reshape({1, 1, 2, 3});
  const std::vector<std::function<void()>> bad = {
      [&] { be.split_heads_silu(flat, 0, 2, 2, 1e-5f, heads); },       // not [views, tokens, channels]
      [&] { be.split_heads_silu(src, -1, 2, 2, 1e-5f, heads); },       // negative offset
      [&] { be.split_heads_silu(src, 0, 4, 0, 1e-5f, heads); },        // no head dim
      [&] { be.split_heads_silu(src, 0, 2, 2, 1e-5f, c7); },           // dst's size
      [&] { be.split_heads_silu(src, 1, 2, 2, 1e-5f, heads); },        // columns past the row
      [&] { be.split_heads_silu(foreign3, 0, 1, 3, 1e-5f, heads3); },  // src of another backend
      [&] { be.split_heads_silu(src, 2, 1, 2, 1e-5f, inside); },       // dst inside src
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    be.log.clear();
    const std::string message = refusal(bad[i]);
    EXPECT_EQ(message.rfind("split_heads_silu: ", 0), 0u) << "case " << i << ": " << message;
    EXPECT_TRUE(be.log.empty()) << "case " << i << ": the hook ran";
  }
  for (const auto& [from, to] : {std::pair<Tensor*, Tensor*>{&src16, &heads16}, {&src16, &heads}, {&src, &heads16}}) {
    be.log.clear();
    EXPECT_EQ(refusal([&] { be.split_heads_silu(*from, 0, 2, 2, -1.0f, *to); }), "no error");
    EXPECT_EQ(be.log, std::vector<std::string>{"split_heads_silu"});
  }
  be.log.clear();
  EXPECT_EQ(refusal([&] { be.split_heads_silu(src, 2, 1, 2, 1e-5f, one_head); }), "no error");  // the last columns
}

// The packed attention writes out while it reads qkv: an out that overlaps qkv is refused, before the hook.
TEST_F(BackendChecks, AttentionPackedRefusesAnOutputOverlappingQkv) {
  be.log.clear();
  Tensor inside = qkv.reshape({12}).slice(4, 8).reshape({1, 2, 2});
  const std::string message = refusal([&] { be.attention_packed(qkv, 1, 2, 0.5f, inside); });
  EXPECT_EQ(message, "attention_packed: out overlaps qkv");
  EXPECT_TRUE(be.log.empty());
}

// The bad calls above break shapes; an operand of another backend is refused on its own, by the op's name.
TEST_F(BackendChecks, AnOperandOfAnotherBackendIsRefused) {
  be.log.clear();
  const std::string message = refusal([this] { be.add(a, foreign); });
  EXPECT_EQ(message.rfind("add: ", 0), 0u) << message;
  EXPECT_NE(message.find("lives on another backend"), std::string::npos) << message;
  EXPECT_TRUE(be.log.empty());
  EXPECT_TRUE(other.log.size() == 1 && other.log[0] == "empty");  // only the allocation reached the other backend
}

}  // namespace
}  // namespace lact
