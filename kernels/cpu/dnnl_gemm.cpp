#include "kernels/cpu/dnnl_gemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/bf16_constants.h"
#include "kernels/cpu/vector_math.h"

#ifdef LACT_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#endif
#endif

// OpenBLAS's own entry point (not in cblas.h on every build).
extern "C" char* openblas_get_corename(void);

namespace lact {

std::string openblas_core_name() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

#ifndef LACT_HAVE_DNNL

bool dnnl_available() { return false; }
std::string dnnl_version_text() { return "no oneDNN in this build (libdnnl-dev; scripts/setup.sh installs it)"; }
bool cpu_bf16_available(std::string* why) {
  if (why) *why = "this build of lact has no oneDNN (libdnnl-dev; scripts/setup.sh installs it)";
  return false;
}
std::string cpu_bf16_capability() { return "no oneDNN in this build"; }
struct DnnlGemm::State {};
DnnlGemm::DnnlGemm(bool) { throw std::invalid_argument("oneDNN products need a build with oneDNN (libdnnl-dev)"); }
DnnlGemm::~DnnlGemm() = default;
void pack_bf16(const MatrixOperand&, bool, int64_t, int64_t, int64_t, Bf16Buffer&) {
  throw std::invalid_argument("oneDNN products need a build with oneDNN (libdnnl-dev)");
}
void DnnlGemm::gemm(bool, bool, int64_t, int64_t, int64_t, float, MatrixOperand, MatrixOperand, float, float*, int64_t,
                    int64_t, int64_t, const uint16_t*, Bf16Constants*) {
  throw std::invalid_argument("oneDNN products need a build with oneDNN (libdnnl-dev)");
}

#else
namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    default:
      return nullptr;
  }
}

// fp32 -> bf16, round to nearest even (NaN stays NaN, made quiet). Integer arithmetic and an integer select, no
// branch, so that the packing loop vectorizes.
inline uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

LACT_VECTOR_CLONES void convert_row(const float* src, uint16_t* dst, int64_t width) {
  for (int64_t c = 0; c < width; ++c) dst[c] = to_bf16(src[c]);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LACT_NATIVE_BF16_CONVERSION 1
// The CPU's own conversion (AVX512-BF16's vcvtne2ps2bf16, 32 values an instruction: nearest even, NaN made quiet,
// the bits to_bf16 gives), about 3x faster than the integer arithmetic's AVX-512 clone: packing the operands was
// about a tenth of a bf16 product of 512^3. The instruction flushes subnormal inputs to zero, where to_bf16 rounds
// them, so a block of 32 holding one takes the integer path (the products treat bf16 subnormals as zero anyway;
// this keeps the packed bits one function of the input).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void convert_row_native(const float* src, uint16_t* dst,
                                                                               int64_t width) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x007fffff);
  int64_t c = 0;
  for (; c + 32 <= width; c += 32) {
    const __m512i lo = _mm512_loadu_si512(src + c), hi = _mm512_loadu_si512(src + c + 16);
    const __mmask16 subnormal_lo = _mm512_mask_test_epi32_mask(~_mm512_test_epi32_mask(lo, exponent), lo, mantissa);
    const __mmask16 subnormal_hi = _mm512_mask_test_epi32_mask(~_mm512_test_epi32_mask(hi, exponent), hi, mantissa);
    if (subnormal_lo | subnormal_hi) {
      for (int64_t i = c; i < c + 32; ++i) dst[i] = to_bf16(src[i]);
      continue;
    }
    const __m512bh packed = _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(hi), _mm512_castsi512_ps(lo));
    _mm512_storeu_si512(dst + c, reinterpret_cast<__m512i>(packed));
  }
  for (; c < width; ++c) dst[c] = to_bf16(src[c]);
}

bool cpu_converts_bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}
#endif

void convert_any_row(const float* src, uint16_t* dst, int64_t width) {
#ifdef LACT_NATIVE_BF16_CONVERSION
  if (cpu_converts_bf16()) return convert_row_native(src, dst, width);
#endif
  convert_row(src, dst, width);
}

// out (batch x rows x cols, compact) <- the transpose of each stored cols x rows matrix of x, in 32 x 32 tiles.
void transpose_into(const MatrixOperand& x, int64_t rows, int64_t cols, int64_t batch, FloatBuffer& out) {
  constexpr int64_t kTile = 32;
  out.resize(static_cast<size_t>(batch * rows * cols));
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
#pragma omp parallel for collapse(3) schedule(static) if (batch * rows * cols > 65536 && !omp_in_parallel())
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t rt = 0; rt < row_tiles; ++rt)
      for (int64_t ct = 0; ct < col_tiles; ++ct) {
        const float* src = x.data + b * x.stride;
        float* dst = out.data() + b * rows * cols;
        const int64_t r_end = std::min(rows, (rt + 1) * kTile), c_end = std::min(cols, (ct + 1) * kTile);
        // Rows outer, writes contiguous: with columns outer, the 32 rows written 2-6 KiB apart evicted each
        // other from L1 (1.3 ms against 0.09 for 768 x 512).
        for (int64_t r = rt * kTile; r < r_end; ++r)
          for (int64_t c = ct * kTile; c < c_end; ++c) dst[r * cols + c] = src[c * x.ld + r];
      }
}

}  // namespace

void pack_bf16(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch, Bf16Buffer& out) {
  const int64_t stored_rows = transpose ? cols : rows, width = transpose ? rows : cols;
  out.resize(static_cast<size_t>(batch * rows * cols));
#pragma omp parallel for collapse(2) schedule(static) if (batch * rows * cols > 65536)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < stored_rows; ++r) {
      const float* src = x.data + b * x.stride + r * x.ld;
      uint16_t* dst = out.data() + (b * stored_rows + r) * width;
      convert_any_row(src, dst, width);
    }
}

bool dnnl_available() { return true; }

std::string dnnl_version_text() {
  return "oneDNN " + std::to_string(dnnl_version()->major) + "." + std::to_string(dnnl_version()->minor);
}

bool cpu_bf16_available(std::string* why) {
  const char* name = isa_name(dnnl::get_effective_cpu_isa());
  if (!name && why)
    *why =
        "this CPU has no bf16 instructions (AVX512-BF16 or AMX): bf16 products would run slower than fp32 "
        "here; use --precision fp32";
  return name != nullptr;
}

std::string cpu_bf16_capability() {
  const char* name = isa_name(dnnl::get_effective_cpu_isa());
  return name ? std::string(name) + " (" + dnnl_version_text() + ")" : "none (no AVX512-BF16 or AMX)";
}

namespace {

// What a matmul primitive is specialised for: shape, operand layouts, alpha and beta, and the calling thread's
// OpenMP thread count, which a primitive fixes when it is made (some run parallel regions of exactly that many
// threads: in a forked child, whose first thread runs on one, a parent's two-thread primitive waited forever for
// pool threads fork() did not copy; and a count lowered under load must not keep the old count's primitives).
using PrimitiveKey = std::array<int64_t, 15>;

int64_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

// The strides of op(X) (rows x cols, batch entries `stride` apart) stored row-major with leading dimension ld.
dnnl::memory::dims operand_strides(const MatrixOperand& x, bool transpose, int64_t rows, int64_t batch) {
  const int64_t batch_stride = batch == 1 ? rows * x.ld : x.stride;  // unused for one entry; kept plain
  return transpose ? dnnl::memory::dims{batch_stride, 1, x.ld} : dnnl::memory::dims{batch_stride, x.ld, 1};
}

// The strides of op(X) (rows x cols) as pack_bf16 packs it.
dnnl::memory::dims packed_strides(bool transpose, int64_t rows, int64_t cols) {
  return transpose ? dnnl::memory::dims{rows * cols, 1, rows} : dnnl::memory::dims{rows * cols, cols, 1};
}

// A batch of matrices (rows x cols, strides {batch, row, column}); one matrix as 2-D: for a 3-D B, oneDNN 2.6's
// bf16 matmul asks for no layout of its own (it keeps B plain), for a 2-D one its blocked layout.
dnnl::memory::desc matrices(int64_t batch, int64_t rows, int64_t cols, dnnl::memory::data_type type,
                            const dnnl::memory::dims& strides) {
  if (batch == 1) return dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{strides[1], strides[2]});
  return dnnl::memory::desc({batch, rows, cols}, type, strides);
}

}  // namespace

// A matmul primitive with the scratchpad size it asks for (user scratchpad mode: each call brings its own, so
// that one primitive may run on several threads at once; the library's shared scratchpad would forbid it).
struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory::desc scratchpad;
};

// The operands of one product as oneDNN takes them.
struct Operands {
  dnnl::memory::desc a, b;
  const void* a_data = nullptr;
  const void* b_data = nullptr;
  bool b_blocked = false;  // B is a constant in oneDNN's own layout
  // fp32: A as handed to oneDNN (after the copy of a large transposed A), for the primitive's key.
  bool transpose_a = false;
  int64_t a_ld = 0, a_stride = 0;
};

struct DnnlGemm::State {
  Operands operands(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, MatrixOperand a,
                    MatrixOperand b, int64_t batch, const dnnl::memory::desc& c_desc, const uint16_t* packed_a,
                    Bf16Constants* constants);
  bool use_constant_b(const MatrixOperand& b, bool transpose_b, int64_t k, int64_t n, int64_t batch,
                      const dnnl::memory::desc& c_desc, Bf16Constants* constants, Operands& x);
  dnnl::memory::desc constant_b_layout(const dnnl::memory::desc& a, const dnnl::memory::desc& plain_b,
                                       const dnnl::memory::desc& c, bool transpose_b);

  bool bf16 = false;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  // A matmul primitive per key (creating one costs far more than running it).
  std::map<PrimitiveKey, Primitive> primitives;
  // bf16: the layout oneDNN asks for a constant B of each shape (batch, k, n, transposed), chosen by the first
  // product of that shape; a zero desc where it asks for none. One per shape, so that a weight is reordered once
  // whatever the other operand's row count.
  std::map<std::array<int64_t, 4>, dnnl::memory::desc> constant_b_layouts;
  std::mutex mutex;  // guards the maps only: products run at once from several threads (renders)
};

namespace {

// The calling thread's buffers for one product at a time: bf16 operands packed, an fp32 A transposed, the
// primitive's scratchpad.
struct CallBuffers {
  Bf16Buffer a, b;
  FloatBuffer a_transposed;
  std::vector<uint8_t> scratchpad;
};
thread_local CallBuffers call_buffers;

dnnl::primitive_attr product_attributes(float alpha, float beta) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  return attr;
}

Primitive make_primitive(const dnnl::engine& engine, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                         const dnnl::memory::desc& c, float alpha, float beta) {
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), product_attributes(alpha, beta), engine);
  return {dnnl::matmul(pd), pd.scratchpad_desc()};
}

}  // namespace

DnnlGemm::DnnlGemm(bool bf16_operands) : state_(std::make_unique<State>()) { state_->bf16 = bf16_operands; }
DnnlGemm::~DnnlGemm() = default;

// The layout oneDNN's matmul asks for B of this product (a, c: the other operands' descs), or a zero desc where
// it asks for B as packed. Measured on the model's weights (512 x {768..3072} x {768..3072}, 2 threads): 8-15%
// faster than handing it B packed plain, which it then copies into that layout at every product.
dnnl::memory::desc DnnlGemm::State::constant_b_layout(const dnnl::memory::desc& a, const dnnl::memory::desc& plain_b,
                                                      const dnnl::memory::desc& c, bool transpose_b) {
  const dnnl::memory::dims dims = plain_b.dims();
  const int64_t batch = dims.size() == 3 ? dims[0] : 1;
  const std::array<int64_t, 4> shape{batch, dims[dims.size() - 2], dims[dims.size() - 1], transpose_b};
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = constant_b_layouts.find(shape);
  if (found == constant_b_layouts.end()) {
    const dnnl::memory::desc any(dims, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::any);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, any, c), product_attributes(1.0f, 0.0f), engine);
    const dnnl::memory::desc chosen = pd.weights_desc();
    found = constant_b_layouts.emplace(shape, chosen == plain_b ? dnnl::memory::desc() : chosen).first;
  }
  return found->second;
}

// B as a constant in oneDNN's layout (reordered once, kept with the constant), where it is one and oneDNN asks.
bool DnnlGemm::State::use_constant_b(const MatrixOperand& b, bool transpose_b, int64_t k, int64_t n, int64_t batch,
                                     const dnnl::memory::desc& c_desc, Bf16Constants* constants, Operands& x) {
  if (!constants || !constants->holds(b, transpose_b, k, n, batch)) return false;
  const dnnl::memory::desc blocked = constant_b_layout(x.a, x.b, c_desc, transpose_b);
  if (blocked.is_zero()) return false;
  const dnnl::memory::desc plain = x.b;
  const void* data =
      constants->find_or_make(b, transpose_b, k, n, batch, blocked.get_size(), [&](const uint16_t* packed, void* out) {
        dnnl::memory from(plain, engine, const_cast<uint16_t*>(packed)), to(blocked, engine, out);
        dnnl::stream stream(engine);
        dnnl::reorder(from, to).execute(stream, from, to);
        stream.wait();
      });
  if (!data) return false;
  x.b = blocked, x.b_data = data, x.b_blocked = true;
  return true;
}

// The operands' descs and data: bf16 packed (or B a constant in oneDNN's layout); fp32 in place, transposes as
// strides, except a large transposed A. oneDNN 2.6's fp32 matmul ran the TTT update's K^T dgate (768 x 1536 x 512)
// and hidden^T V at 40-65% of its rate, and at 90-100% with A transposed first. Smaller, the copy cost more than
// it saved (512 x 512 x 512: 82%).
Operands DnnlGemm::State::operands(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, MatrixOperand a,
                                   MatrixOperand b, int64_t batch, const dnnl::memory::desc& c_desc,
                                   const uint16_t* packed_a, Bf16Constants* constants) {
  using dt = dnnl::memory::data_type;
  CallBuffers& buffers = call_buffers;
  Operands x;
  x.transpose_a = transpose_a;
  if (bf16) {  // packed in their stored layout, compacted
    if (!packed_a) pack_bf16(a, transpose_a, m, k, batch, buffers.a);
    x.a = matrices(batch, m, k, dt::bf16, packed_strides(transpose_a, m, k));
    x.a_data = packed_a ? packed_a : buffers.a.data();
    x.b = matrices(batch, k, n, dt::bf16, packed_strides(transpose_b, k, n));
    if (use_constant_b(b, transpose_b, k, n, batch, c_desc, constants, x)) return x;
    const uint16_t* packed_b = constants ? constants->find_or_pack(b, transpose_b, k, n, batch) : nullptr;
    if (!packed_b) pack_bf16(b, transpose_b, k, n, batch, buffers.b);
    x.b_data = packed_b ? packed_b : buffers.b.data();
    return x;
  }
  if (transpose_a && fp32_copies_transposed_a(m, n)) {
    transpose_into(a, m, k, batch, buffers.a_transposed);
    a = {buffers.a_transposed.data(), k, m * k};
    transpose_a = false;
  }
  x.a = matrices(batch, m, k, dt::f32, operand_strides(a, transpose_a, m, batch));
  x.b = matrices(batch, k, n, dt::f32, operand_strides(b, transpose_b, k, batch));
  x.a_data = a.data, x.b_data = b.data;
  x.transpose_a = transpose_a, x.a_ld = a.ld, x.a_stride = a.stride;
  return x;
}

void DnnlGemm::gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
                    MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch,
                    const uint16_t* packed_a, Bf16Constants* constants) {
  if (batch == 1) stride_c = m * ldc;  // unused; keeps the descriptor's strides plain
  const dnnl::memory::desc c_desc = matrices(batch, m, n, dnnl::memory::data_type::f32, {stride_c, ldc, 1});
  const Operands x = state_->operands(transpose_a, transpose_b, m, n, k, a, b, batch, c_desc, packed_a, constants);
  const bool packed = state_->bf16;
  const PrimitiveKey key{batch,
                         m,
                         n,
                         k,
                         ldc,
                         stride_c,
                         float_bits(alpha),
                         float_bits(beta),
                         x.transpose_a,
                         transpose_b + 2 * x.b_blocked,
                         packed ? 0 : x.a_ld,
                         packed ? 0 : b.ld,
                         packed || batch == 1 ? 0 : x.a_stride,
                         packed || batch == 1 ? 0 : b.stride,
                         omp_get_max_threads()};
  Primitive primitive;
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    auto found = state_->primitives.find(key);
    if (found == state_->primitives.end())
      found = state_->primitives.emplace(key, make_primitive(state_->engine, x.a, x.b, c_desc, alpha, beta)).first;
    primitive = found->second;  // handles: the primitive itself is shared, immutable
  }
  // oneDNN's memory objects take non-const handles; matmul only reads SRC and WEIGHTS.
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, {x.a, state_->engine, const_cast<void*>(x.a_data)}},
                                             {DNNL_ARG_WEIGHTS, {x.b, state_->engine, const_cast<void*>(x.b_data)}},
                                             {DNNL_ARG_DST, {c_desc, state_->engine, c}}};
  CallBuffers& buffers = call_buffers;
  if (const size_t bytes = primitive.scratchpad.get_size()) {
    buffers.scratchpad.resize(std::max(buffers.scratchpad.size(), bytes));
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(primitive.scratchpad, state_->engine, buffers.scratchpad.data()));
  }
  dnnl::stream stream(state_->engine);  // this call's own
  primitive.matmul.execute(stream, args);
  stream.wait();
}

#endif

}  // namespace lact
