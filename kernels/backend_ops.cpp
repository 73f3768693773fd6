// Backend's public ops: each runs its operand checks (kernels/op_checks.h) and then the backend's do_ hook. The
// checks live here, not in the backends, so that a backend cannot skip one: it only implements the hooks.
#include <stdexcept>

#include "kernels/backend.h"
#include "kernels/op_checks.h"

namespace lact {

// ---- memory

Tensor Backend::empty(const Shape& shape, DType dtype) {
  checks::shape(shape);
  checks::storage(*this, dtype);
  return do_empty(shape, dtype);
}

void Backend::upload(Tensor& dst, const float* host) {
  checks::transfer(*this, "upload", dst);
  do_upload(dst, host);
}

void Backend::download(const Tensor& src, float* host) {
  checks::transfer(*this, "download", src);
  do_download(src, host);
}

void Backend::copy(Tensor& dst, const Tensor& src) {
  checks::copy(*this, dst, src);
  do_copy(dst, src);
}

void Backend::fill(Tensor& t, float value) {
  checks::unary(*this, "fill", t);
  do_fill(t, value);
}

void Backend::copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block,
                          int64_t count) {
  checks::copy_blocks(dst_stride, src_stride, block, count);
  do_copy_blocks(dst, dst_stride, src, src_stride, block, count);
}

// ---- matrix products

void Backend::gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
                   MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  checks::gemm(transpose_a, transpose_b, m, n, k, a, b, c, ldc, batch);
  do_gemm(transpose_a, transpose_b, m, n, k, alpha, a, b, beta, c, ldc, stride_c, batch);
}

void Backend::linear_bf16(const Tensor& x, const Tensor& weight, Tensor& y, float beta) {
  checks::linear_bf16(*this, x, weight, y);
  do_linear_bf16(x, weight, y, beta);
}

void Backend::do_linear_bf16(const Tensor&, const Tensor&, Tensor&, float) {
  throw std::logic_error("linear_bf16 on the " + name() + " backend, which keeps no bf16 storage");
}

void Backend::gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, Bf16Operand a,
                        Bf16Operand b, float beta, void* c, DType c_type, int64_t ldc, int64_t stride_c,
                        int64_t batch) {
  checks::gemm_bf16(transpose_a, transpose_b, m, n, k, a, b, c, ldc, batch);
  do_gemm_bf16(transpose_a, transpose_b, m, n, k, alpha, a, b, beta, c, c_type, ldc, stride_c, batch);
}

void Backend::do_gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, Bf16Operand, Bf16Operand, float, void*, DType,
                           int64_t, int64_t, int64_t) {
  throw std::logic_error("gemm_bf16 on the " + name() + " backend, which keeps no bf16 storage");
}

// ---- elementwise and row ops

void Backend::add(Tensor& y, const Tensor& x) {
  checks::same_size_op(*this, "add", y, x);
  do_add(y, x);
}

void Backend::axpby(Tensor& y, float a, const Tensor& x, float b) {
  checks::same_size_op(*this, "axpby", y, x);
  do_axpby(y, a, x, b);
}

void Backend::add_scaled_identity(Tensor& y, float a) {
  checks::add_scaled_identity(*this, y);
  do_add_scaled_identity(y, a);
}

void Backend::silu(Tensor& x) {
  checks::unary(*this, "silu", x);
  do_silu(x);
}

void Backend::gelu(Tensor& x) {
  checks::unary(*this, "gelu", x);
  do_gelu(x);
}

void Backend::sigmoid(Tensor& x) {
  checks::unary(*this, "sigmoid", x);
  do_sigmoid(x);
}

void Backend::softplus(Tensor& x, float shift) {
  checks::unary(*this, "softplus", x);
  do_softplus(x, shift);
}

void Backend::add_bias(Tensor& x, const Tensor& bias) {
  checks::add_bias(*this, x, bias);
  do_add_bias(x, bias);
}

void Backend::layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  checks::layer_norm(*this, x, weight, y);
  do_layer_norm(x, weight, eps, y);
}

void Backend::rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y) {
  checks::rms_norm(*this, x, weight, group, y);
  do_rms_norm(x, weight, group, eps, y);
}

void Backend::rms_norm_columns(Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight, float eps) {
  checks::rms_norm_columns(*this, x, column_offset, columns, weight);
  do_rms_norm_columns(x, column_offset, columns, weight, eps);
}

void Backend::l2_normalize(Tensor& x, int64_t group, float eps) {
  checks::l2_normalize(*this, x, group);
  do_l2_normalize(x, group, eps);
}

void Backend::scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride) {
  checks::scale_rows(*this, x, scale);
  do_scale_rows(x, scale, scale_batch_stride, scale_row_stride);
}

// ---- layout, attention, convolution, tokens

void Backend::split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, Tensor& dst) {
  checks::split_heads(*this, src, column_offset, heads, head_dim, dst);
  do_split_heads(src, column_offset, heads, head_dim, dst);
}

void Backend::split_heads_silu(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, float l2_eps,
                               Tensor& dst) {
  checks::split_heads_silu(*this, src, column_offset, heads, head_dim, dst);
  do_split_heads_silu(src, column_offset, heads, head_dim, l2_eps, dst);
}

void Backend::merge_heads(const Tensor& src, Tensor& dst) {
  checks::merge_heads(*this, src, dst);
  do_merge_heads(src, dst);
}

void Backend::attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) {
  checks::attention(*this, q, k, v, out);
  do_attention(q, k, v, scale, out);
}

void Backend::attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) {
  checks::attention_packed(*this, qkv, heads, head_dim, out);
  do_attention_packed(qkv, heads, head_dim, scale, out);
}

void Backend::conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu,
                     Tensor& y) {
  checks::conv2d(*this, x, weight, bias, stride, padding, y);
  do_conv2d(x, weight, bias, stride, padding, relu, y);
}

void Backend::max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y) {
  checks::max_pool2d(*this, x, kernel, stride, y);
  do_max_pool2d(x, kernel, stride, y);
}

void Backend::ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width, int patch,
                         Tensor& tokens) {
  checks::ray_tokens(*this, poses, images, height, width, patch, tokens);
  do_ray_tokens(poses, images, height, width, patch, tokens);
}

void Backend::ray_tokens(const Tensor& poses, int height, int width, int patch, Tensor& tokens) {
  checks::ray_tokens(*this, poses, height, width, patch, tokens);
  do_ray_tokens(poses, height, width, patch, tokens);
}

// ---- SwiGLU pieces and reductions

void Backend::swiglu(const Tensor& gate, const Tensor& up, Tensor& out) {
  checks::swiglu(*this, gate, up, out);
  do_swiglu(gate, up, out);
}

void Backend::swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden) {
  checks::swiglu_backward(*this, gate, up, dhidden);
  do_swiglu_backward(gate, up, dhidden);
}

void Backend::swiglu_backward_packed(Tensor& gate_up, Tensor& dhidden, const float* scale, int64_t scale_part_stride,
                                     int64_t scale_batch_stride, int64_t scale_row_stride) {
  checks::swiglu_backward_packed(*this, gate_up, dhidden, scale);
  do_swiglu_backward_packed(gate_up, dhidden, scale, scale_part_stride, scale_batch_stride, scale_row_stride);
}

void Backend::swiglu_packed(Tensor& gate_up) {
  checks::swiglu_packed(*this, gate_up);
  do_swiglu_packed(gate_up);
}

std::vector<double> Backend::batched_dot(const Tensor& a, const Tensor& b) {
  checks::batched_dot(*this, a, b);
  return do_batched_dot(a, b);
}

void Backend::column_norms(const Tensor& w, Tensor& norms) {
  checks::column_norms(*this, w, norms);
  do_column_norms(w, norms);
}

void Backend::restore_column_norms(Tensor& w, const Tensor& target, float eps) {
  checks::restore_column_norms(*this, w, target);
  do_restore_column_norms(w, target, eps);
}

void Backend::scale_batched(Tensor& x, const std::vector<float>& scale) {
  checks::scale_batched(*this, x, scale);
  do_scale_batched(x, scale);
}

}  // namespace lact
