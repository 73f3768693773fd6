// lact's FlashAttention-2-class kernel on bf16 storage (attention_fa2_kernel<D, __nv_bfloat16>, launched by
// cuda::attention_packed with bf16 pointers), run on the CPU through tests/common/cuda_emulator.h: on the packed qkv
// projection output [views, tokens, width] in place, writing its columns of a wider output, against a
// double-precision attention of the same bf16 values, and against the float-storage kernel on those values widened
// to float (bit for bit after the output's bf16 rounding where both kernels use the same key tiles). Outputs are
// poisoned with NaN first, so an element the kernel forgets to write, or one it writes outside its columns, fails.
// Also the emulated ldmatrix the bf16 kernel reads its K and V fragments with, against the PTX ISA's fragment table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/attention_fa2_launch.cuh"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using bf16 = __nv_bfloat16;
using test::random_values;
using test::relative_error;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const bf16 kNaNBf16 = __float2bfloat16(kNaN);

float widened(bf16 x) { return __bfloat162float(x); }
float widened(float x) { return x; }

// The packed layout: head h's q, k and v at columns col + h d, col + dim + h d, col + 2 dim + h d of rows of `width`
// (col > 0: the operands start past a column offset); its output at columns out_col + h d of rows of `out_width`.
struct PackedCase {
  int64_t views, tokens, heads;
  int d;
  float scale;
  int64_t col = 0, extra = 0, out_col = 4;  // extra: columns past the operands in each qkv row
  int64_t dim() const { return heads * d; }
  int64_t width() const { return col + 3 * dim() + extra; }
  int64_t out_width() const { return dim() + 8; }
  std::string name() const {
    return "d " + std::to_string(d) + ", " + std::to_string(views) + " views x " + std::to_string(heads) + " heads x " +
           std::to_string(tokens) + " tokens, scale " + std::to_string(scale) + ", columns from " + std::to_string(col);
  }
};

// softmax(q k^T scale) v in double of the packed values, as [views, heads, tokens, d].
std::vector<double> reference_attention(const PackedCase& c, const std::vector<float>& qkv) {
  const int64_t t = c.tokens, d = c.d, width = c.width();
  std::vector<double> out(c.views * c.heads * t * d), p(t);
  for (int64_t v = 0; v < c.views; ++v)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < t; ++i) {
        const float* q = qkv.data() + (v * t + i) * width + c.col + h * d;
        double most = -INFINITY, sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          const float* k = qkv.data() + (v * t + j) * width + c.col + c.dim() + h * d;
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += double(q[e]) * k[e];
          p[j] = dot * c.scale;
          most = std::max(most, p[j]);
        }
        for (int64_t j = 0; j < t; ++j) sum += p[j] = std::exp(p[j] - most);
        double* o = out.data() + ((v * c.heads + h) * t + i) * d;
        for (int64_t j = 0; j < t; ++j) {
          const float* val = qkv.data() + (v * t + j) * width + c.col + 2 * c.dim() + h * d;
          for (int64_t e = 0; e < d; ++e) o[e] += p[j] / sum * val[e];
        }
      }
  return out;
}

// The kernel's output columns as [views, heads, tokens, d], and how many elements outside them are not NaN.
template <typename T>
std::vector<float> output_columns(const PackedCase& c, const std::vector<T>& out, int64_t& written_outside) {
  const int64_t t = c.tokens, d = c.d, ow = c.out_width();
  std::vector<float> got(c.views * c.heads * t * d);
  written_outside = 0;
  for (int64_t r = 0; r < c.views * t; ++r)
    for (int64_t col = 0; col < ow; ++col) {
      const float x = widened(out[r * ow + col]);
      if (col < c.out_col || col >= c.out_col + c.dim()) {
        written_outside += !std::isnan(x);
        continue;
      }
      const int64_t h = (col - c.out_col) / d, e = (col - c.out_col) % d, v = r / t, i = r % t;
      got[((v * c.heads + h) * t + i) * d + e] = x;
    }
  return got;
}

// The emulated ldmatrix.x4 and .x4.trans (kernels/cuda/mma_primitives.cuh) on one warp: a 32 x 24 bf16 tile of distinct
// bit patterns, lane l giving the address of tile row (7 l + 3) % 32 from column 8 ((l / 3) % 3), so each matrix row
// comes from a different place; every lane's four registers from both forms.
constexpr int kProbeLd = 24;
int probe_row(int lane) { return (7 * lane + 3) % 32; }
int probe_col(int lane) { return 8 * (lane / 3 % 3); }

__global__ void ldmatrix_probe_kernel(const bf16* src, uint32_t* plain, uint32_t* transposed) {
  LACT_SHARED(__align__(16) bf16, tile, [32 * kProbeLd]);
  const int lane = threadIdx.x;
  for (int i = lane; i < 32 * kProbeLd; i += 32) tile[i] = src[i];
  __syncwarp();
  uint32_t r[4], t[4];
  cuda::ldmatrix_x4(r, tile + probe_row(lane) * kProbeLd + probe_col(lane));
  cuda::ldmatrix_x4_trans(t, tile + probe_row(lane) * kProbeLd + probe_col(lane));
  for (int m = 0; m < 4; ++m) plain[lane * 4 + m] = r[m], transposed[lane * 4 + m] = t[m];
}

// The PTX ISA's ldmatrix fragment table, element by element: element (i, j) of matrix m (row i given by lane 8 m + i)
// goes to register m of lane 4 i + j / 2, half j % 2; with .trans to lane 4 j + i / 2, half i % 2.
TEST(Fa2Bf16Storage, EmulatedLdmatrixFollowsThePtxFragmentTable) {
  std::vector<bf16> src(32 * kProbeLd);
  for (size_t i = 0; i < src.size(); ++i) src[i].bits = static_cast<uint16_t>(0x1000 + 37 * i);  // distinct
  std::vector<uint32_t> plain(128, 0xdeadbeefu), transposed(128, 0xdeadbeefu);
  cuda_emulation::launch(ldmatrix_probe_kernel, dim3(1), dim3(32), static_cast<const bf16*>(src.data()), plain.data(),
                         transposed.data());
  std::vector<uint32_t> want(128, 0), want_trans(128, 0);
  for (int m = 0; m < 4; ++m)
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j) {
        const int giver = 8 * m + i;
        const uint32_t bits = src[probe_row(giver) * kProbeLd + probe_col(giver) + j].bits;
        want[(4 * i + j / 2) * 4 + m] |= bits << (16 * (j % 2));
        want_trans[(4 * j + i / 2) * 4 + m] |= bits << (16 * (i % 2));
      }
  for (int lane = 0; lane < 32; ++lane)
    for (int m = 0; m < 4; ++m) {
      EXPECT_EQ(plain[lane * 4 + m], want[lane * 4 + m]) << "lane " << lane << " matrix " << m;
      EXPECT_EQ(transposed[lane * 4 + m], want_trans[lane * 4 + m]) << "lane " << lane << " matrix " << m << " .trans";
    }
}

// What each schedule of the emulator exposes (as test_cuda_emulated's fa2 tests): copies landing at the wait (a read
// before the wait fails), or at issue with warps at different speeds (a stage refilled while another warp reads it).
using Fa2Schedule = cuda_emulation::ScheduleScope;

struct Outputs {
  std::vector<float> qkv;      // the bf16 inputs, widened to float (exact)
  std::vector<bf16> storage;   // the bf16-storage kernel's output rows
  std::vector<float> widened;  // the float-storage kernel's output rows on qkv
};

// Random packed qkv rounded to bf16; both kernels on it, the bf16 one under the given schedule.
Outputs run_both(const PackedCase& c, unsigned seed, bool adversarial) {
  cuda_emulation::Launcher launch;
  const int64_t rows = c.views * c.tokens;
  Outputs r;
  const std::vector<float> x = random_values(rows * c.width(), seed);
  std::vector<bf16> qkv(x.size());
  for (size_t i = 0; i < x.size(); ++i) qkv[i] = __float2bfloat16(x[i]), r.qkv.push_back(widened(qkv[i]));
  r.storage.assign(rows * c.out_width(), kNaNBf16);
  r.widened.assign(rows * c.out_width(), kNaN);
  {
    const Fa2Schedule schedule(adversarial);
    cuda::attention_packed(launch, qkv.data(), c.width(), c.col, c.col + c.dim(), c.col + 2 * c.dim(), r.storage.data(),
                           c.out_width(), c.out_col, c.views, c.tokens, c.heads, c.d, c.scale);
  }
  cuda::attention_packed(launch, r.qkv.data(), c.width(), c.col, c.col + c.dim(), c.col + 2 * c.dim(), r.widened.data(),
                         c.out_width(), c.out_col, c.views, c.tokens, c.heads, c.d, c.scale);
  return r;
}

// Where both kernels take the same key tiles (or one tile holds every key), they compute the same fp32 values.
bool same_tiles(const PackedCase& c) {
  int float_keys = 0, bf16_keys = 0;
  for (const auto& [d, f, b] : {std::tuple{16, cuda::kFa2TileKeys<16, float>, cuda::kFa2TileKeys<16, bf16>},
                                std::tuple{32, cuda::kFa2TileKeys<32, float>, cuda::kFa2TileKeys<32, bf16>},
                                std::tuple{64, cuda::kFa2TileKeys<64, float>, cuda::kFa2TileKeys<64, bf16>},
                                std::tuple{128, cuda::kFa2TileKeys<128, float>, cuda::kFa2TileKeys<128, bf16>}})
    if (d == c.d) float_keys = f, bf16_keys = b;
  return float_keys == bf16_keys || c.tokens <= std::min(float_keys, bf16_keys);
}

// Head dims 16, 32, 64, 128; token counts not multiples of the 128-query blocks or the key tiles (bf16: 64 keys at
// d <= 64, 32 at d 128), several views and heads, a scale large enough that the running max moves between tiles,
// operands from a column offset of 16 bytes with columns after them, output into columns [4, 4 + dim) of a wider row.
// Each case under both of the emulator's schedules.
TEST(Fa2Bf16Storage, PackedQkvMatchesDoublePrecisionAndTheFloatKernel) {
  for (const bool adversarial : {false, true})
    for (const PackedCase& c :
         {PackedCase{2, 150, 3, 32, 0.3f}, PackedCase{1, 70, 2, 64, 0.125f}, PackedCase{2, 97, 2, 64, 3.0f, 8, 8},
          PackedCase{1, 130, 1, 128, 0.09f}, PackedCase{3, 40, 2, 16, 1.0f, 16, 0}, PackedCase{1, 30, 2, 64, 0.5f},
          PackedCase{1, 16, 1, 128, 0.5f, 8, 8}}) {
      const std::string what = c.name() + (adversarial ? " (copies at issue, skewed warps)" : "");
      const Outputs r = run_both(c, 91 + c.d, adversarial);
      int64_t outside = 0, outside_float = 0;
      const std::vector<float> got = output_columns(c, r.storage, outside);
      const std::vector<float> got_float = output_columns(c, r.widened, outside_float);
      EXPECT_EQ(outside, 0) << what;
      EXPECT_EQ(outside_float, 0) << what;
      const std::vector<double> want = reference_attention(c, r.qkv);
      const double err = relative_error(got, want), err_float = relative_error(got_float, want);
      EXPECT_LT(err, 3e-3) << what;  // the float-storage kernel's bound against bf16-rounded inputs
      EXPECT_GT(err, 1e-5) << what << ": the bf16 rounding should show";
      // Against the float kernel: each element its value rounded to bf16 where both take the same key tiles; else
      // (P rounded to bf16 against another running max) within the output's bf16 rounding, 2^-8 relative.
      int64_t differ = 0;
      for (size_t i = 0; i < r.storage.size(); ++i)
        differ += !std::isnan(r.widened[i]) && r.storage[i].bits != __float2bfloat16(r.widened[i]).bits;
      const double apart = relative_error(got, got_float);
      if (same_tiles(c)) {
        EXPECT_EQ(differ, 0) << what;
      } else {
        EXPECT_LT(apart, 1.0 / 256) << what;
      }
      std::printf(
          "bf16-storage fa2, %s: rel err %.3g (float storage %.3g); against the float kernel: %.3g, rounded "
          "to bf16 %lld of %lld differ\n",
          what.c_str(), err, err_float, apart, (long long)differ, (long long)got.size());
    }
}

// One key: the output is that key's value, bit for bit (P = 1, the sum 1, V's bf16 passed through exactly).
TEST(Fa2Bf16Storage, OneKeyGivesItsValueBitForBit) {
  const PackedCase c{2, 1, 3, 64, 0.7f, 8, 0};
  const Outputs r = run_both(c, 5, false);
  for (int64_t v = 0; v < c.views; ++v)
    for (int64_t e = 0; e < c.dim(); ++e) {
      const bf16 out = r.storage[v * c.out_width() + c.out_col + e];
      const bf16 value = __float2bfloat16(r.qkv[v * c.width() + c.col + 2 * c.dim() + e]);
      ASSERT_EQ(out.bits, value.bits) << "view " << v << " column " << e;
    }
}

// K/V rows not 16-byte aligned (8 bf16, where the float path needs 4 floats) and Q/O pairs not 4-byte aligned are
// refused as the float path refuses what it cannot copy: attention_fa2_aligned says no, attention_fa2 throws one
// line naming the alignment, nothing is written. 16-byte offsets are taken (PackedQkv... above runs them).
TEST(Fa2Bf16Storage, RefusesOperandsItCannotCopy) {
  const int64_t tokens = 40, d = 32;
  std::vector<bf16> buffer(4 * tokens * d + 64), out(tokens * d + 8, kNaNBf16);
  bf16* base = buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) % 16) % 16 / 2;  // 16-byte aligned
  const auto split = [&](int64_t k_offset, int64_t q_offset, int64_t out_offset) {
    return cuda::split_head_operands<bf16>(base + q_offset, base + tokens * d + k_offset,
                                           base + 2 * tokens * d + 8 + k_offset, out.data() + out_offset, tokens,
                                           tokens, d);
  };
  cuda_emulation::Launcher launch;
  ASSERT_TRUE(cuda::attention_fa2_aligned(split(8, 0, 0)));  // 16 bytes: taken
  for (const auto& [k_offset, q_offset, out_offset, why] :
       {std::tuple{4, 0, 0, "K/V 8 bytes off"}, std::tuple{2, 0, 0, "K/V 4 bytes off"},
        std::tuple{0, 1, 0, "Q one element off"}, std::tuple{0, 0, 1, "O one element off"}}) {
    const cuda::AttentionOperandsOf<bf16> ops = split(k_offset, q_offset, out_offset);
    EXPECT_FALSE(cuda::attention_fa2_aligned(ops)) << why;
    try {
      cuda::attention_fa2(launch, ops, 1, 1, tokens, tokens, static_cast<int>(d), 0.5f);
      ADD_FAILURE() << why << ": not refused";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("16-byte aligned"), std::string::npos) << e.what();
    }
  }
  cuda::AttentionOperandsOf<bf16> rows = split(0, 0, 0);
  rows.kv_strides.token = d + 4;  // rows of 36 bf16: 72 bytes apart
  EXPECT_FALSE(cuda::attention_fa2_aligned(rows));
  EXPECT_THROW(cuda::attention_fa2(launch, rows, 1, 1, tokens, tokens, static_cast<int>(d), 0.5f),
               std::invalid_argument);
  for (const bf16& x : out) EXPECT_TRUE(std::isnan(widened(x)));
  // The float path's rule in bytes, for comparison: 8 bytes off refused, 16 taken.
  std::vector<float> f(3 * tokens * d + 8);
  const auto split_float = [&](int64_t offset) {
    float* p = f.data() + (16 - reinterpret_cast<uintptr_t>(f.data()) % 16) % 16 / 4;
    return cuda::split_head_operands<float>(p, p + offset, p + offset, p, tokens, tokens, d);
  };
  EXPECT_FALSE(cuda::attention_fa2_aligned(split_float(2)));
  EXPECT_TRUE(cuda::attention_fa2_aligned(split_float(4)));
}

}  // namespace
}  // namespace lact
