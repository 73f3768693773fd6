// The TTT layer's batched products on float32 or bf16 heads (core/layers.h's TttOperand): the same call site runs
// Backend::gemm on float32 operands or Backend::gemm_bf16 on bf16 ones (the CUDA backend's activations at bf16).
#include <stdexcept>

#include "core/layers.h"

namespace lact {

namespace {
const void* element(const TttOperand& o) {
  return static_cast<const char*>(o.t->raw()) + o.offset * dtype_bytes(o.t->dtype());
}
}  // namespace

TttOperand rows_of(const Tensor& t, int64_t begin) { return {&t, begin * t.dim(2), t.dim(2), t.dim(1) * t.dim(2)}; }

TttOperand all_of(const Tensor& t) { return rows_of(t, 0); }

Tensor stored_as(Backend& be, const Tensor& t, DType type) {
  if (t.dtype() == type) return t;
  Tensor copy = be.empty(t.shape(), type);
  be.copy(copy, t);
  return copy;
}

void ttt_product(Backend& be, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                 TttOperand a, TttOperand b, float beta, TttOperand c, int64_t batch) {
  const DType type = a.t->dtype();
  if (b.t->dtype() != type)
    throw std::logic_error("ttt_product: operands of two storage types (convert one with stored_as)");
  if (type == DType::F32 && c.t->dtype() == DType::F32)
    return be.gemm(transpose_a, transpose_b, m, n, k, alpha, {a.t->data() + a.offset, a.ld, a.stride},
                   {b.t->data() + b.offset, b.ld, b.stride}, beta, c.t->data() + c.offset, c.ld, c.stride, batch);
  be.gemm_bf16(transpose_a, transpose_b, m, n, k, alpha, {element(a), a.ld, a.stride}, {element(b), b.ld, b.stride},
               beta, const_cast<void*>(element(c)), c.t->dtype(), c.ld, c.stride, batch);
}

}  // namespace lact
