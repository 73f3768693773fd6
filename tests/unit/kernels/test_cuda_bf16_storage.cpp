// bf16 storage on the CUDA backend (issue 51 item 3), through kernels/cuda/device_backend.h's code on the emulated
// device: the host rounding, transfers, the ops that take bf16 tensors (linear_bf16, the activations, the qk norm,
// the packed attention on each path) against double-precision loops or the CPU backend on the same rounded values,
// the checks that refuse bf16 where an op takes float32 only, and a recorded bf16 render equal to a direct one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/safetensors.h"
#include "core/weights.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/bf16_storage.h"
#include "kernels/cuda/device_backend.h"
#include "tests/common/emulated_cuda_device.h"
#include "tests/common/fixture_views.h"
#include "tests/common/split_heads_silu_cases.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::EmulatedDevice;
using test::FakeAttentionLibrary;
using test::random_values;
using test::relative_error;
using EmulatedBackend = cuda::DeviceBackend<EmulatedDevice>;

float rounded(float x) { return cuda::bf16_value(cuda::bf16_bits(x)); }
std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = rounded(x);
  return v;
}
// The largest difference in units of the bf16 spacing at the expected value (2^-7 relative to its power of two).
double worst_bf16_steps(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double step = std::ldexp(1.0, std::ilogb(std::max(std::abs(want[i]), 1e-30)) - 7);
    worst = std::max(worst, std::abs(got[i] - want[i]) / step);
  }
  return worst;
}

// Hand values: ties go to the even neighbour, overflow to infinity, NaN stays NaN; and the host's rounding is the
// device's (the emulator's __float2bfloat16) on random values.
TEST(Bf16Storage, HostRoundingIsNearestEven) {
  EXPECT_EQ(cuda::bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(cuda::bf16_bits(1.0f + 1.0f / 256), 0x3f80);  // halfway between 1 and 1 + 2^-7: to 1 (even)
  EXPECT_EQ(cuda::bf16_bits(1.0f + 3.0f / 256), 0x3f82);  // halfway between 1 + 2^-7 and 1 + 2^-6: up (even)
  EXPECT_EQ(cuda::bf16_bits(1.0f + 1.5f / 256), 0x3f81);  // past halfway: up
  EXPECT_EQ(cuda::bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(cuda::bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to infinity
  EXPECT_TRUE(std::isnan(cuda::bf16_value(cuda::bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(cuda::bf16_value(0x3fc0), 1.5f);
  for (float x : random_values(10000, 1, 1000.0f)) ASSERT_EQ(cuda::bf16_bits(x), __float2bfloat16(x).bits) << x;
  EXPECT_TRUE(cuda::parse_bf16_activations(nullptr));
  EXPECT_FALSE(cuda::parse_bf16_activations("0"));
  EXPECT_THROW(cuda::parse_bf16_activations("yes"), std::invalid_argument);
}

// Transfers round on the way in and widen exactly on the way out; copy and fill keep the type; an op that takes
// float32 only, a copy across types and bf16 on the CPU backend are refused with one line naming the problem.
TEST(Bf16Storage, TransfersCopyFillAndRefusals) {
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  EXPECT_EQ(be.activation_type(), DType::BF16);
  const auto values = random_values(300, 2, 3.0f);
  Tensor t = be.from_host({300}, values.data());
  Tensor b = be.empty({3, 100}, DType::BF16);
  EXPECT_EQ(b.bytes(), 600);
  be.upload(b, values.data());
  const std::vector<float> stored = rounded(values);
  EXPECT_EQ(be.to_host(b), stored);
  EXPECT_NE(stored, values);
  Tensor c = be.empty({3, 100}, DType::BF16);
  be.copy(c, b);
  EXPECT_EQ(be.to_host(c.slice(1, 3)), std::vector<float>(stored.begin() + 100, stored.end()));
  be.fill(c, 1.0f / 3);
  EXPECT_EQ(be.to_host(c), std::vector<float>(300, rounded(1.0f / 3)));
  EXPECT_THROW(b.data(), std::logic_error);
  const auto message = [](auto&& op) {
    try {
      op();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { be.add(t, b.reshape({300})); }),
            "add: an operand of shape [300] is bfloat16: this op takes float32 tensors only");
  Tensor widened = be.empty({300}), narrowed = be.empty({300}, DType::BF16);
  be.copy(widened, b.reshape({300}));  // bf16 -> float32: exact
  EXPECT_EQ(be.to_host(widened), stored);
  be.copy(narrowed, t);  // float32 -> bf16: rounded
  EXPECT_EQ(be.to_host(narrowed), stored);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  EXPECT_EQ(message([&] { cpu->empty({2}, DType::BF16); }),
            "empty: bfloat16 storage on the cpu backend, which keeps float32 only");
  EXPECT_EQ(cpu->activation_type(), DType::F32);
  EmulatedBackend fp32("cuda-emulated", Precision::Fp32);
  EXPECT_EQ(fp32.activation_type(), DType::F32);
  ::setenv("LACT_BF16_ACTIVATIONS", "0", 1);
  EXPECT_EQ(EmulatedBackend("cuda-emulated", Precision::Bf16).activation_type(), DType::F32);
  ::unsetenv("LACT_BF16_ACTIVATIONS");
}

// y = x W^T for x and y of each storage type, the weight marked constant (its bf16 copy made once) or not, against
// a double loop on the bf16-rounded operands: a float32 y within float32 rounding, a bf16 y within one bf16 step.
TEST(Bf16Storage, LinearOnBf16OperandsMatchesADoubleLoop) {
  const int64_t rows = 37, in = 48, out = 20;
  const auto x = random_values(rows * in, 3), w = random_values(out * in, 4, 0.5f);
  const auto xr = rounded(x), wr = rounded(w);
  std::vector<double> want(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < in; ++i) sum += double(xr[r * in + i]) * wr[o * in + i];
      want[size_t(r * out + o)] = sum;
    }
  for (bool mark : {false, true})
    for (DType xt : {DType::F32, DType::BF16})
      for (DType yt : {DType::F32, DType::BF16}) {
        if (xt == DType::F32 && yt == DType::F32) continue;  // a plain gemm
        EmulatedBackend be("cuda-emulated", Precision::Bf16);
        Tensor tw = be.from_host({out, in}, w.data());
        if (mark) be.mark_constant(tw);
        Tensor tx = be.empty({rows, in}, xt), ty = be.empty({rows, out}, yt);
        be.upload(tx, x.data());
        linear(be, tx, tw, ty);
        linear(be, tx, tw, ty);  // the constant's copy reused
        const std::vector<float> got = be.to_host(ty);
        const std::string what =
            std::string("x ") + dtype_name(xt) + ", y " + dtype_name(yt) + (mark ? ", marked" : "");
        if (yt == DType::F32)
          EXPECT_LT(relative_error(got, want), 1e-6) << what;
        else
          EXPECT_LE(worst_bf16_steps(got, want), 0.5001) << what;  // the nearest bf16 of a float32-exact sum
        EXPECT_EQ(be.device().bf16_gemms, 2) << what;
      }
}

// linear_add on bf16 x into a float32 y (a block's output projection adding into the residual stream): cuBLAS's
// beta 1, the old y added once in float32, with a marked and an unmarked weight.
TEST(Bf16Storage, LinearAddOnBf16OperandsAddsIntoFloat32Y) {
  const int64_t rows = 29, in = 40, out = 24;
  const auto x = random_values(rows * in, 51), w = random_values(out * in, 52, 0.5f),
             y0 = random_values(rows * out, 53);
  const auto xr = rounded(x), wr = rounded(w);
  std::vector<double> want(y0.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < in; ++i) sum += double(xr[r * in + i]) * wr[o * in + i];
      want[size_t(r * out + o)] = y0[size_t(r * out + o)] + sum;
    }
  for (bool mark : {false, true}) {
    EmulatedBackend be("cuda-emulated", Precision::Bf16);
    Tensor tw = be.from_host({out, in}, w.data());
    if (mark) be.mark_constant(tw);
    Tensor tx = be.empty({rows, in}, DType::BF16), ty = be.from_host({rows, out}, y0.data());
    be.upload(tx, x.data());
    linear_add(be, tx, tw, ty);
    EXPECT_LT(relative_error(be.to_host(ty), want), 1e-6) << (mark ? "marked" : "unmarked");
    EXPECT_EQ(be.device().bf16_gemms, 1);
  }
}

// The norms with a bf16 output (a block's LayerNorm for products that round it anyway, the TTT apply's RMSNorm before
// its output projection): the float32 result rounded to nearest even, bit for bit, from the same kernel.
TEST(Bf16Storage, NormsWithABf16OutputRoundTheFloat32Result) {
  const int64_t rows = 37, cols = 96, group = 32;
  const auto x = random_values(rows * cols, 61, 3.0f), w = random_values(cols, 62), wg = random_values(group, 63);
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  Tensor tx = be.from_host({rows, cols}, x.data()), tw = be.from_host({cols}, w.data());
  Tensor twg = be.from_host({group}, wg.data());
  Tensor y32 = be.empty({rows, cols}), y16 = be.empty({rows, cols}, DType::BF16);
  be.layer_norm(tx, tw, 1e-5f, y32);
  be.layer_norm(tx, tw, 1e-5f, y16);
  EXPECT_EQ(be.to_host(y16), rounded(be.to_host(y32)));
  be.rms_norm(tx, twg, group, 1e-5f, y32);
  be.rms_norm(tx, twg, group, 1e-5f, y16);
  EXPECT_EQ(be.to_host(y16), rounded(be.to_host(y32)));
  // and the float32 result is the norm (against a double loop), so the rounding is of the right values
  std::vector<double> want(x.size());
  for (int64_t g = 0; g < rows * cols / group; ++g) {
    double squares = 0;
    for (int64_t i = 0; i < group; ++i) squares += double(x[g * group + i]) * x[g * group + i];
    const double inv = 1.0 / std::sqrt(squares / double(group) + 1e-5);
    for (int64_t i = 0; i < group; ++i) want[size_t(g * group + i)] = x[g * group + i] * inv * wg[i];
  }
  EXPECT_LT(test::max_abs_error(be.to_host(y32), want), 1e-5);
}

// A marked weight matrix gets its bf16 copy when it is marked (at load): a product recorded later launches only the
// product (an unmarked weight is rounded into scratch inside the recording, every replay), and the replay computes
// what the direct call did.
TEST(Bf16Storage, AMarkedWeightIsRoundedOnceWhenMarked) {
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  const auto x = random_values(4 * 8, 17), w = random_values(6 * 8, 18);
  Tensor tx = be.empty({4, 8}, DType::BF16), tw = be.from_host({6, 8}, w.data()), y = be.empty({4, 6});
  be.upload(tx, x.data());
  const int64_t launches_before_mark = be.device().launches;
  be.mark_constant(tw);
  EXPECT_EQ(be.device().launches, launches_before_mark + 1);  // the rounding, once
  for (bool marked : {true, false}) {
    Tensor weight = marked ? tw : be.from_host({6, 8}, w.data());
    linear(be, tx, weight, y);
    const std::vector<float> direct = be.to_host(y);
    be.fill(y, 0.0f);
    ASSERT_TRUE(be.begin_recording());
    linear(be, tx, weight, y);
    const std::unique_ptr<Recording> r = be.end_recording();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(static_cast<const test::EmulatedRecording&>(*r).work.size(), marked ? 1u : 2u) << marked;
    be.replay(*r);
    EXPECT_EQ(be.to_host(y), direct) << marked;
  }
}

// gemm_bf16 against a double loop on the same bf16 values: every transpose, batched, beta 0 and 1 into float32 C
// (within float32 rounding) and into bf16 C (within one bf16 step), and a long reduction that split-K slices (its
// partial outputs float32, the slices cut in bf16 elements).
TEST(Bf16Storage, GemmBf16MatchesADoubleLoop) {
  struct Case {
    bool ta, tb;
    int64_t m, n, k, batch;
    float beta;
    DType c_type;
  };
  for (const Case& c :
       {Case{false, false, 9, 13, 24, 2, 0.0f, DType::F32}, Case{true, false, 9, 13, 24, 2, 1.0f, DType::F32},
        Case{false, true, 16, 8, 40, 3, 0.0f, DType::BF16}, Case{true, true, 7, 5, 33, 1, 1.0f, DType::BF16},
        Case{true, false, 64, 64, 20000, 1, 1.0f, DType::F32}}) {
    EmulatedBackend be("cuda-emulated", Precision::Bf16);
    const int64_t a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k, b_rows = c.tb ? c.n : c.k,
                  b_cols = c.tb ? c.k : c.n;
    const auto a = rounded(random_values(c.batch * a_rows * a_cols, 11)),
               b = rounded(random_values(c.batch * b_rows * b_cols, 12));
    auto c0 = random_values(c.batch * c.m * c.n, 13);
    if (c.c_type == DType::BF16) c0 = rounded(c0);
    std::vector<double> want(c0.size());
    for (int64_t x = 0; x < c.batch; ++x)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < c.k; ++p) {
            const double av = a[x * a_rows * a_cols + (c.ta ? p * a_cols + i : i * a_cols + p)];
            const double bv = b[x * b_rows * b_cols + (c.tb ? j * b_cols + p : p * b_cols + j)];
            sum += av * bv;
          }
          const size_t at = size_t((x * c.m + i) * c.n + j);
          want[at] = 0.5 * sum + c.beta * c0[at];
        }
    Tensor ta = be.empty({c.batch, a_rows, a_cols}, DType::BF16), tb = be.empty({c.batch, b_rows, b_cols}, DType::BF16);
    Tensor tc = be.empty({c.batch, c.m, c.n}, c.c_type);
    be.upload(ta, a.data());
    be.upload(tb, b.data());
    be.upload(tc, c0.data());
    const int64_t gemms_before = be.device().gemms;
    be.gemm_bf16(c.ta, c.tb, c.m, c.n, c.k, 0.5f, {ta.raw(), a_cols, a_rows * a_cols},
                 {tb.raw(), b_cols, b_rows * b_cols}, c.beta, tc.raw(), c.c_type, c.n, c.m * c.n, c.batch);
    const std::vector<float> got = be.to_host(tc);
    const std::string what = "m " + std::to_string(c.m) + " k " + std::to_string(c.k);
    if (c.c_type == DType::F32)
      EXPECT_LT(relative_error(got, want), 1e-5) << what;
    else
      EXPECT_LE(worst_bf16_steps(got, want), 0.5001) << what;
    EXPECT_EQ(be.device().gemms - gemms_before, c.k >= cuda::kSplitKMinReduction ? 2 : 1) << what;  // split: 4 slices
  }
}

// GELU, SiLU, the qk norm, the L2 norm and the packed SwiGLU on bf16 tensors: the CPU's float32 op on the same
// rounded values, rounded.
TEST(Bf16Storage, ActivationsAndQkNormComputeInFloatAndRoundOnce) {
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  const int64_t rows = 9, width = 96;
  const auto x = rounded(random_values(rows * width, 5, 3.0f)), g = random_values(16, 6);
  auto check = [&](const char* name, auto&& op) {
    Tensor c = cpu->from_host({rows, width}, x.data()), b = be.empty({rows, width}, DType::BF16);
    be.upload(b, x.data());
    op(*cpu, c);
    op(be, b);
    const std::vector<float> want = rounded(cpu->to_host(c)), got = be.to_host(b);
    EXPECT_LT(relative_error(got, want), 4e-3) << name;  // a float32 ulp apart before rounding: rarely a step
    EXPECT_NE(got, x) << name;
  };
  check("gelu", [](Backend& on, Tensor& t) { on.gelu(t); });
  check("l2_normalize", [](Backend& on, Tensor& t) { on.l2_normalize(t, 32, 1e-5f); });
  check("swiglu_packed", [](Backend& on, Tensor& t) {
    Tensor packed = t.reshape({1, rows, width});
    on.swiglu_packed(packed);
  });
  check("silu", [](Backend& on, Tensor& t) { on.silu(t); });
  Tensor gc = cpu->from_host({16}, g.data()), gb = be.from_host({16}, g.data());
  check("rms_norm_columns",
        [&](Backend& on, Tensor& t) { on.rms_norm_columns(t, 16, 32, &on == cpu.get() ? gc : gb, 1e-6f); });
}

// The TTT backward on bf16 directions with float32 learning rates: the CPU's on the same values, rounded once.
TEST(Bf16Storage, SwigluBackwardOnBf16Directions) {
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  const int64_t heads = 2, rows = 21, cols = 24;
  const auto gu = rounded(random_values(heads * rows * 2 * cols, 14, 2.0f)),
             dh = rounded(random_values(heads * rows * cols, 15)), lr = random_values(rows * 3 * heads, 16);
  Tensor cgu = cpu->from_host({heads, rows, 2 * cols}, gu.data()), cdh = cpu->from_host({heads, rows, cols}, dh.data());
  Tensor clr = cpu->from_host({rows * 3 * heads}, lr.data()), blr = be.from_host({rows * 3 * heads}, lr.data());
  Tensor bgu = be.empty(cgu.shape(), DType::BF16), bdh = be.empty(cdh.shape(), DType::BF16);
  be.upload(bgu, gu.data());
  be.upload(bdh, dh.data());
  cpu->swiglu_backward_packed(cgu, cdh, clr.data(), heads, 1, 3 * heads);
  be.swiglu_backward_packed(bgu, bdh, blr.data(), heads, 1, 3 * heads);
  EXPECT_LT(relative_error(be.to_host(bgu), rounded(cpu->to_host(cgu))), 4e-3);
  EXPECT_LT(relative_error(be.to_host(bdh), rounded(cpu->to_host(cdh))), 4e-3);
  Tensor f32 = be.empty(cdh.shape());
  EXPECT_THROW(be.swiglu_backward_packed(bgu, f32, blr.data(), heads, 1, 3 * heads), std::invalid_argument);
}

// The TTT layer's bf16 projection split into float32 or bf16 heads, float32 rows split into bf16 heads, and float32
// heads merged into bf16 rows: the CPU's split and merge of the same values, exactly (widening is exact) or rounded
// once.
TEST(Bf16Storage, SplitFromAndMergeIntoBf16Rows) {
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  const int64_t views = 2, tokens = 11, heads = 3, d = 8, width = 3 * heads * d;
  const auto x = random_values(views * tokens * width, 8, 2.0f), xr = rounded(x);
  Tensor bx = be.empty({views, tokens, width}, DType::BF16), cx = cpu->from_host({views, tokens, width}, xr.data());
  be.upload(bx, x.data());
  Tensor bq = be.empty({views, heads, tokens, d}), cq = cpu->empty({views, heads, tokens, d});
  be.split_heads(bx, heads * d, heads, d, bq);
  cpu->split_heads(cx, heads * d, heads, d, cq);
  EXPECT_EQ(be.to_host(bq), cpu->to_host(cq));
  const auto h = random_values(views * heads * tokens * d, 9);
  Tensor bh = be.from_host({views, heads, tokens, d}, h.data()), ch = cpu->from_host(bh.shape(), h.data());
  Tensor bm = be.empty({views, tokens, heads * d}, DType::BF16), cm = cpu->empty({views, tokens, heads * d});
  be.merge_heads(bh, bm);
  cpu->merge_heads(ch, cm);
  EXPECT_EQ(be.to_host(bm), rounded(cpu->to_host(cm)));
  Tensor bf16_heads = be.empty(bq.shape(), DType::BF16);
  be.split_heads(bx, heads * d, heads, d, bf16_heads);  // bf16 -> bf16: the same values
  EXPECT_EQ(be.to_host(bf16_heads), cpu->to_host(cq));
  Tensor fx = be.from_host({views, tokens, width}, x.data());
  be.split_heads(fx, heads * d, heads, d, bf16_heads);  // float32 -> bf16: rounded once
  cpu->upload(cx, x.data());
  cpu->split_heads(cx, heads * d, heads, d, cq);
  EXPECT_EQ(be.to_host(bf16_heads), rounded(cpu->to_host(cq)));
  EXPECT_THROW(be.merge_heads(bf16_heads, bm), std::invalid_argument);  // merge reads float32 heads only
}

// The TTT layer's heads in one pass on bf16 storage: bf16 rows into bf16 or float32 heads and float32 rows into bf16
// heads, bit for bit the device's silu + split_heads + l2_normalize (SiLU rounded to the rows' type, then the heads',
// the norm from those rounded values), and the CPU's float32 op on the same rows within bf16 rounding.
TEST(Bf16Storage, SplitHeadsSiluRoundsAsTheSequenceDoes) {
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  for (const auto& [from, to] :
       {std::pair{DType::BF16, DType::BF16}, std::pair{DType::BF16, DType::F32}, std::pair{DType::F32, DType::BF16}})
    for (const test::HeadsCase& c : test::heads_cases()) {
      std::vector<float> x = random_values(size_t(c.views * c.tokens * c.width), unsigned(c.tokens), 3.0f);
      if (from == DType::BF16) x = rounded(x);
      const test::HeadsRun run = test::run_split_heads_silu(be, x, c, from, to);
      const test::HeadsRun reference = test::run_split_heads_silu(*cpu, x, c, DType::F32, DType::F32);
      const std::string what =
          std::string(dtype_name(from)) + " -> " + dtype_name(to) + ", head_dim " + std::to_string(c.head_dim);
      EXPECT_TRUE(test::same_bits(run.fused, run.sequence)) << what;
      const double err = relative_error(run.fused, reference.fused);
      EXPECT_LT(err, 4e-3) << what;
      if (c.head_dim > 1) {  // 1: x / |x| is +-1
        EXPECT_GT(err, 1e-5) << what << ": bf16 rounding should show";
      }
    }
}

// The packed attention on bf16 qkv and out, on each path: the library on the rows in place (nothing staged), our
// fa2 kernel in place, LACT_ATTENTION=wmma and a head dim fa2 lacks (widened to float around our kernels); each
// against the CPU's attention of the same rounded values (bf16's 1e-2 relative).
TEST(Bf16Storage, PackedAttentionOnEveryPath) {
  const int64_t views = 3, tokens = 70, heads = 2;
  for (const auto& [name, choice, d, with_library] :
       {std::tuple<const char*, const char*, int64_t, bool>{"library", "", 32, true},
        {"fa2", "own", 32, false},
        {"wmma", "wmma", 32, false},
        {"d 24", "own", 24, false}}) {
    ::setenv("LACT_ATTENTION", choice, 1);
    EmulatedBackend be("cuda-emulated", Precision::Bf16);
    ::unsetenv("LACT_ATTENTION");
    FakeAttentionLibrary library(be.device());
    if (with_library) be.device().library = &library;
    const auto qkv = rounded(random_values(views * tokens * 3 * heads * d, 7, 2.0f));
    const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
    const Shape rows{views, tokens, 3 * heads * d}, merged{views, tokens, heads * d};
    Tensor cq = cpu->from_host(rows, qkv.data()), co = cpu->empty(merged);
    cpu->attention_packed(cq, heads, d, 0.3f, co);
    Tensor bq = be.empty(rows, DType::BF16), bo = be.empty(merged, DType::BF16);
    be.upload(bq, qkv.data());
    be.attention_packed(bq, heads, d, 0.3f, bo);
    EXPECT_LT(relative_error(be.to_host(bo), cpu->to_host(co)), 1e-2) << name;
    EXPECT_EQ(library.runs, with_library ? 1 : 0) << name;
  }
}

// A render recorded as a CUDA graph on bf16 activations equals the direct render bit for bit (the weights' bf16
// copies made before the capture, by the encode), and the encode ran its window attention and MLP products on
// bf16 operands.
TEST(Bf16Storage, RecordedBf16RenderEqualsDirectRender) {
  const std::string dir = test::env_path("LACT_FIXTURE_DIR");
  ASSERT_FALSE(dir.empty()) << "LACT_FIXTURE_DIR is not set";
  const SafetensorsFile expected(dir + "/expected.safetensors");
  const std::vector<PosedImage> views = test::fixture_inputs(expected);
  const std::vector<Camera> first = {test::fixture_targets(expected).at(0)};
  EmulatedBackend be("cuda-emulated", Precision::Bf16);
  ModelOptions direct_options;
  direct_options.graphs = false;
  const Model direct(load_model(dir + "/model.safetensors", be), be, direct_options);
  const Model recorded(load_model(dir + "/model.safetensors", be), be, ModelOptions());
  const SceneState state = direct.encode(views);
  EXPECT_GT(be.device().bf16_gemms, 0);
  const std::vector<Image> a = recorded.render(state, first), b = direct.render(state, first);
  EXPECT_EQ(be.device().recordings, 1);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a[0].rgb, b[0].rgb);
  const std::vector<Image> c = recorded.render(state, first);  // replayed
  EXPECT_EQ(c[0].rgb, b[0].rgb);
  EXPECT_GE(be.device().replays, 1);
}

}  // namespace
}  // namespace lact
