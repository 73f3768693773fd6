// The CPU's matrix products through oneDNN matmul.
//  - fp32: operands used in place (any transpose, leading dimension and batch stride). Faster than or equal to
//    OpenBLAS on the model's shapes wherever measured (`lact bench --gemm-libraries`); on AVX-512 CPUs that
//    Debian's OpenBLAS 0.3.21 does not recognise (AMD Zen 4) about twice as fast, since OpenBLAS then falls back
//    to its AVX2 kernels while oneDNN dispatches on the instruction set itself.
//  - bf16: operands rounded to bf16, products accumulated and stored in fp32, as the CUDA backend's bf16. For
//    CPUs with bf16 instructions (AVX512-BF16, AMX); elsewhere refused (they would run slower than fp32).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/raw_buffer.h"

namespace lact {

class Bf16Constants;

// Whether this build and this CPU can run bf16 products fast; `why` says why not.
bool cpu_bf16_available(std::string* why = nullptr);
// "avx512_core_bf16", "avx512_core_amx", ... (oneDNN's name for the best ISA it uses here), or why none.
std::string cpu_bf16_capability();
// Whether this build has oneDNN (libdnnl-dev), and its version ("oneDNN 2.6") or why not.
bool dnnl_available();
std::string dnnl_version_text();
// OpenBLAS's kernel family on this CPU ("Haswell", "SkylakeX", ...; OPENBLAS_CORETYPE overrides it).
std::string openblas_core_name();

// X's stored matrices of every batch entry (op(X) rows x cols: stored rows x cols, or cols x rows when
// transposed), compacted and rounded to bf16 (nearest even): one linear pass, no transpose.
void pack_bf16(const MatrixOperand& x, bool transpose, int64_t rows, int64_t cols, int64_t batch, Bf16Buffer& out);

// Whether an fp32 product whose C is m x n copies a transposed A to its transpose first (oneDNN 2.6 ran those
// shapes at 40-65% of its rate with A transposed in place); the memory estimate counts the copy.
inline bool fp32_copies_transposed_a(int64_t m, int64_t n) { return m >= 768 && n >= 768 && m * n >= (1 << 20); }

class DnnlGemm {
 public:
  // bf16_operands: round A and B to bf16 (fp32 accumulation and output); otherwise fp32 throughout.
  explicit DnnlGemm(bool bf16_operands);
  ~DnnlGemm();
  // The Backend::gemm contract (row-major, op(A_b) m x k, batch strides; k > 0). bf16: `packed_a`, when given,
  // holds op(A) already packed by pack_bf16 (a constant operand converted once); B, where `constants` holds it, is
  // taken from there in the layout oneDNN asks for (reordered once), else packed there or here.
  void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
            MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch,
            const uint16_t* packed_a = nullptr, Bf16Constants* constants = nullptr);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lact
