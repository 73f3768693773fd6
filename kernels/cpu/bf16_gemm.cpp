#include "kernels/cpu/bf16_gemm.h"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef LACT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace lact {

#ifndef LACT_HAVE_DNNL

bool cpu_bf16_available(std::string* why) {
  if (why) *why = "this build of lact has no oneDNN (libdnnl-dev; scripts/setup.sh installs it)";
  return false;
}
std::string cpu_bf16_capability() { return "no oneDNN in this build"; }
struct Bf16Gemm::State {};
Bf16Gemm::Bf16Gemm() = default;
Bf16Gemm::~Bf16Gemm() = default;
void Bf16Gemm::gemm(bool, bool, int64_t, int64_t, int64_t, float, MatrixOperand, MatrixOperand, float, float*, int64_t,
                    int64_t, int64_t) {
  throw std::invalid_argument("bf16 products on the CPU need oneDNN");
}

#else

namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    default: return nullptr;
  }
}

// fp32 -> bf16, round to nearest even (NaN stays NaN).
inline uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// op(X_b) rows x cols of every batch entry, row-major and contiguous, in bf16.
void pack(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch, std::vector<uint16_t>& out) {
  out.resize(static_cast<size_t>(batch * rows * cols));
#pragma omp parallel for collapse(2) schedule(static) if (batch * rows * cols > 65536)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = x.data + b * x.stride;
      uint16_t* dst = out.data() + (b * rows + r) * cols;
      if (transpose)
        for (int64_t c = 0; c < cols; ++c) dst[c] = to_bf16(src[c * x.ld + r]);
      else
        for (int64_t c = 0; c < cols; ++c) dst[c] = to_bf16(src[r * x.ld + c]);
    }
}

}  // namespace

bool cpu_bf16_available(std::string* why) {
  const char* name = isa_name(dnnl::get_effective_cpu_isa());
  if (!name && why)
    *why = "this CPU has no bf16 instructions (AVX512-BF16 or AMX): bf16 products would run slower than fp32 "
           "here; use --precision fp32";
  return name != nullptr;
}

std::string cpu_bf16_capability() {
  const char* name = isa_name(dnnl::get_effective_cpu_isa());
  return name ? std::string(name) + " (oneDNN " + std::to_string(dnnl_version()->major) + "." +
                    std::to_string(dnnl_version()->minor) + ")"
              : "none (no AVX512-BF16 or AMX)";
}

struct Bf16Gemm::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // A matmul primitive per shape, strides, alpha and beta (creating one costs far more than running it).
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, float>, dnnl::matmul> primitives;
  std::vector<uint16_t> a, b;
  std::mutex mutex;  // one product at a time per backend (the packed operands are shared)
};

Bf16Gemm::Bf16Gemm() : state_(std::make_unique<State>()) {}
Bf16Gemm::~Bf16Gemm() = default;

void Bf16Gemm::gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
                    MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (batch == 1) stride_c = m * ldc;  // unused; keeps the descriptor's strides plain
  pack(a, transpose_a, m, k, batch, state_->a);
  pack(b, transpose_b, k, n, batch, state_->b);
  const dnnl::memory::desc a_desc({batch, m, k}, dt::bf16, tag::abc), b_desc({batch, k, n}, dt::bf16, tag::abc);
  const dnnl::memory::desc c_desc({batch, m, n}, dt::f32, dnnl::memory::dims{stride_c, ldc, 1});
  const auto key = std::make_tuple(batch, m, n, k, ldc, stride_c, alpha, beta);
  auto found = state_->primitives.find(key);
  if (found == state_->primitives.end()) {
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr, state_->engine);
    found = state_->primitives.emplace(key, dnnl::matmul(pd)).first;
  }
  dnnl::memory am(a_desc, state_->engine, state_->a.data()), bm(b_desc, state_->engine, state_->b.data()),
      cm(c_desc, state_->engine, c);
  found->second.execute(state_->stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  state_->stream.wait();
}

#endif

}  // namespace lact
