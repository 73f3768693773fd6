// Operand checks for every backend op, written once: Backend's public op calls the check of its op before the
// backend's do_ hook (kernels/backend_ops.cpp), so CPU, CUDA, the emulated CUDA device and any later backend
// share them and none can skip them. A failed check throws std::invalid_argument "op: what is wrong"; it also
// fails when an operand lives on another backend (a host tensor handed to a GPU kernel would otherwise be read
// as a device address).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/backend.h"  // MatrixOperand
#include "kernels/ray_tokens.h"
#include "kernels/tensor.h"

// Throws std::invalid_argument(op + ": " + message) unless `condition` holds.
#define LACT_CHECK(condition, op, message)               \
  do {                                                   \
    if (!(condition)) ::lact::checks::fail(op, message); \
  } while (0)

namespace lact::checks {

[[noreturn]] void fail(const char* op, const std::string& message);

// Every non-empty operand was allocated by `be` (or views memory that was) and is float32: the ops that also take
// bf16 storage (transfers, copy, fill and the activations, rms_norm_columns, attention_packed, linear_bf16, the
// source of split_heads and the destination of merge_heads) check
// with on_backend_any_type instead.
void on_backend(const Backend& be, const char* op, std::initializer_list<const Tensor*> operands);
void on_backend_any_type(const Backend& be, const char* op, std::initializer_list<const Tensor*> operands);
void same_size(const Tensor& a, const Tensor& b, const char* op);
void same_type(const Tensor& a, const Tensor& b, const char* op);
// Storage of this type is one the backend keeps (bf16 only where Backend::stores_bf16()).
void storage(const Backend& be, DType dtype);

// No negative dimension (the message names the shape; empty() is the only op without an op prefix).
void shape(const Shape& shape);
void transfer(const Backend& be, const char* op, const Tensor& t);  // upload, download
void copy(const Backend& be, const Tensor& dst, const Tensor& src);
void copy_blocks(int64_t dst_stride, int64_t src_stride, int64_t block, int64_t count);
// Sizes not negative; C, and for k > 0 A and B, present with row strides that hold their rows.
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, MatrixOperand a, MatrixOperand b,
          const float* c, int64_t ldc, int64_t batch);
void gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b,
               const void* c, int64_t ldc, int64_t batch);
void same_size_op(const Backend& be, const char* op, const Tensor& y, const Tensor& x);  // add, axpby
void unary(const Backend& be, const char* op, const Tensor& x);                          // activations, fill
// x [rows, in] and y [rows, out] of either storage type, weight [out, in] float32.
void linear_bf16(const Backend& be, const Tensor& x, const Tensor& weight, const Tensor& y);
void add_scaled_identity(const Backend& be, const Tensor& y);
void add_bias(const Backend& be, const Tensor& x, const Tensor& bias);
void layer_norm(const Backend& be, const Tensor& x, const Tensor& weight, const Tensor& y);
void rms_norm(const Backend& be, const Tensor& x, const Tensor& weight, int64_t group, const Tensor& y);
// x [..., width]: columns [column_offset, column_offset + columns) of each row, in groups of weight's size.
void rms_norm_columns(const Backend& be, const Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight);
void l2_normalize(const Backend& be, const Tensor& x, int64_t group);
void scale_rows(const Backend& be, const Tensor& x, const float* scale);
void split_heads(const Backend& be, const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                 const Tensor& dst);
// split_heads' shapes with a head_dim of at least 1, either storage type on either side, dst not overlapping src.
void split_heads_silu(const Backend& be, const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                      const Tensor& dst);
void merge_heads(const Backend& be, const Tensor& src, const Tensor& dst);
void attention(const Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out);
// qkv [views, tokens, 3 heads head_dim], out [views, tokens, heads head_dim], not overlapping qkv.
void attention_packed(const Backend& be, const Tensor& qkv, int64_t heads, int64_t head_dim, const Tensor& out);
// x [N, C, H, W], weight [O, C, KH, KW] no larger than x padded, bias [O] or empty, y of the output's shape.
void conv2d(const Backend& be, const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
            const Tensor& y);
void max_pool2d(const Backend& be, const Tensor& x, int kernel, int stride, const Tensor& y);
void ray_tokens(const Backend& be, const std::vector<RayPose>& poses, const Tensor* images, int height, int width,
                int patch, const Tensor& tokens);
void ray_tokens(const Backend& be, const Tensor& poses, int height, int width, int patch, const Tensor& tokens);
void swiglu(const Backend& be, const Tensor& gate, const Tensor& up, const Tensor& out);
void swiglu_backward(const Backend& be, const Tensor& gate, const Tensor& up, const Tensor& dhidden);
// gate_up [batch, rows, 2 cols] and dhidden [batch, rows, cols], with scales.
void swiglu_backward_packed(const Backend& be, const Tensor& gate_up, const Tensor& dhidden, const float* scale);
// gate_up [batch, rows, 2 cols].
void swiglu_packed(const Backend& be, const Tensor& gate_up);
void batched_dot(const Backend& be, const Tensor& a, const Tensor& b);
void column_norms(const Backend& be, const Tensor& w, const Tensor& norms);
void restore_column_norms(const Backend& be, const Tensor& w, const Tensor& target);
void scale_batched(const Backend& be, const Tensor& x, const std::vector<float>& scale);

}  // namespace lact::checks
