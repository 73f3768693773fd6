#include "kernels/op_checks.h"

#include <stdexcept>

#include "kernels/backend.h"

namespace lact::checks {

void fail(const char* op, const std::string& message) { throw std::invalid_argument(std::string(op) + ": " + message); }

void on_backend_any_type(const Backend& be, const char* op, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    LACT_CHECK(!t || t->empty() || t->backend() == &be, op,
               "an operand of shape " + shape_string(t->shape()) + " lives on another backend");
}

void on_backend(const Backend& be, const char* op, std::initializer_list<const Tensor*> operands) {
  on_backend_any_type(be, op, operands);
  for (const Tensor* t : operands)
    LACT_CHECK(!t || t->empty() || t->dtype() == DType::F32, op,
               "an operand of shape " + shape_string(t->shape()) + " is " + dtype_name(t->dtype()) +
                   ": this op takes float32 tensors only");
}

void same_type(const Tensor& a, const Tensor& b, const char* op) {
  LACT_CHECK(a.dtype() == b.dtype(), op,
             std::string("storage types differ, ") + dtype_name(a.dtype()) + " vs " + dtype_name(b.dtype()));
}

void storage(const Backend& be, DType dtype) {
  LACT_CHECK(dtype == DType::F32 || be.stores_bf16(), "empty",
             std::string(dtype_name(dtype)) + " storage on the " + be.name() + " backend, which keeps float32 only");
}

void same_size(const Tensor& a, const Tensor& b, const char* op) {
  LACT_CHECK(a.numel() == b.numel(), op, "sizes differ, " + shape_string(a.shape()) + " vs " + shape_string(b.shape()));
}

void shape(const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) throw std::invalid_argument("negative dimension in tensor shape " + shape_string(shape));
}

void transfer(const Backend& be, const char* op, const Tensor& t) { on_backend_any_type(be, op, {&t}); }

void copy(const Backend& be, const Tensor& dst, const Tensor& src) {
  on_backend_any_type(be, "copy", {&dst, &src});
  same_size(dst, src, "copy");
}

void copy_blocks(int64_t dst_stride, int64_t src_stride, int64_t block, int64_t count) {
  LACT_CHECK(count <= 1 || (dst_stride >= block && src_stride >= block), "copy_blocks",
             "strides smaller than the block");
}

void gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b,
               const void* c, int64_t ldc, int64_t batch) {
  // The same sizes and strides as gemm's: only whether each pointer is set is read from it.
  const auto as_float = [](const void* p) { return static_cast<const float*>(p); };
  gemm(transpose_a, transpose_b, m, n, k, {as_float(a.data), a.ld, a.stride}, {as_float(b.data), b.ld, b.stride},
       as_float(c), ldc, batch);
}

void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, MatrixOperand a, MatrixOperand b,
          const float* c, int64_t ldc, int64_t batch) {
  // Built only when a check fails (LACT_CHECK evaluates its message then): gemm runs thousands of times a frame.
  const auto sizes = [&] { return "m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k); };
  LACT_CHECK(m >= 0 && n >= 0 && k >= 0 && batch >= 0, "gemm",
             "negative size (" + sizes() + ", batch " + std::to_string(batch) + ")");
  if (m == 0 || n == 0 || batch == 0) return;  // nothing is read or written
  LACT_CHECK(c && ldc >= n, "gemm", "C of " + sizes() + " with row stride " + std::to_string(ldc));
  if (k == 0) return;  // C = beta * C: A and B are not read
  // Stored (before the transpose) A is m x k or k x m, B k x n or n x k: a row stride below the width overlaps rows.
  const int64_t a_width = transpose_a ? m : k, b_width = transpose_b ? k : n;
  LACT_CHECK(a.data && a.ld >= a_width, "gemm", "A of " + sizes() + " with row stride " + std::to_string(a.ld));
  LACT_CHECK(b.data && b.ld >= b_width, "gemm", "B of " + sizes() + " with row stride " + std::to_string(b.ld));
}

void same_size_op(const Backend& be, const char* op, const Tensor& y, const Tensor& x) {
  on_backend(be, op, {&y, &x});
  same_size(y, x, op);
}

void unary(const Backend& be, const char* op, const Tensor& x) { on_backend_any_type(be, op, {&x}); }

void linear_bf16(const Backend& be, const Tensor& x, const Tensor& weight, const Tensor& y) {
  on_backend_any_type(be, "linear", {&x, &y});
  on_backend(be, "linear", {&weight});
  const bool ranks = x.rank() == 2 && weight.rank() == 2 && y.rank() == 2;
  LACT_CHECK(ranks && weight.dim(1) == x.dim(1) && y.dim(0) == x.dim(0) && y.dim(1) == weight.dim(0), "linear",
             "x " + shape_string(x.shape()) + ", weight " + shape_string(weight.shape()) + ", y " +
                 shape_string(y.shape()) + " (want x [rows, in], weight [out, in], y [rows, out])");
}

void add_scaled_identity(const Backend& be, const Tensor& y) {
  on_backend(be, "add_scaled_identity", {&y});
  LACT_CHECK(y.rank() == 3 && y.dim(1) == y.dim(2), "add_scaled_identity", "not square " + shape_string(y.shape()));
}

void add_bias(const Backend& be, const Tensor& x, const Tensor& bias) {
  on_backend(be, "add_bias", {&x, &bias});
  LACT_CHECK(bias.numel() > 0 && x.numel() % bias.numel() == 0, "add_bias", "bias does not divide the tensor");
}

void layer_norm(const Backend& be, const Tensor& x, const Tensor& weight, const Tensor& y) {
  on_backend(be, "layer_norm", {&x, &weight});
  on_backend_any_type(be, "layer_norm", {&y});  // a bf16 y for a module whose products read it (input_type)
  same_size(y, x, "layer_norm");
  LACT_CHECK(weight.numel() > 0 && x.numel() % weight.numel() == 0, "layer_norm", "weight does not divide the tensor");
}

void rms_norm(const Backend& be, const Tensor& x, const Tensor& weight, int64_t group, const Tensor& y) {
  on_backend(be, "rms_norm", {&x, &weight});
  on_backend_any_type(be, "rms_norm", {&y});
  same_size(y, x, "rms_norm");
  LACT_CHECK(group > 0 && weight.numel() == group && x.numel() % group == 0, "rms_norm",
             "weight " + shape_string(weight.shape()) + " for groups of " + std::to_string(group));
}

void rms_norm_columns(const Backend& be, const Tensor& x, int64_t column_offset, int64_t columns,
                      const Tensor& weight) {
  on_backend_any_type(be, "rms_norm_columns", {&x});
  on_backend(be, "rms_norm_columns", {&weight});
  const int64_t group = weight.numel(), width = x.rank() > 0 ? x.dim(x.rank() - 1) : 0;
  LACT_CHECK(x.rank() >= 1 && group > 0 && column_offset >= 0 && columns >= 0 && columns % group == 0 &&
                 column_offset + columns <= width,
             "rms_norm_columns",
             "columns [" + std::to_string(column_offset) + ", " + std::to_string(column_offset + columns) + ") of " +
                 shape_string(x.shape()) + " in groups of weight " + shape_string(weight.shape()));
}

void l2_normalize(const Backend& be, const Tensor& x, int64_t group) {
  on_backend_any_type(be, "l2_normalize", {&x});
  LACT_CHECK(group > 0 && x.numel() % group == 0, "l2_normalize", "group does not divide the tensor");
}

void scale_rows(const Backend& be, const Tensor& x, const float* scale) {
  on_backend(be, "scale_rows", {&x});
  LACT_CHECK(x.rank() == 3 && (scale || x.numel() == 0), "scale_rows",
             "x " + shape_string(x.shape()) + " is not [batch, rows, cols] with scales");
}

void split_heads(const Backend& be, const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                 const Tensor& dst) {
  on_backend_any_type(be, "split_heads", {&src, &dst});
  LACT_CHECK(src.rank() == 3 && column_offset >= 0 && heads >= 0 && head_dim >= 0, "split_heads",
             "source " + shape_string(src.shape()) + " is not [views, tokens, channels]");
  const int64_t views = src.dim(0), tokens = src.dim(1), width = src.dim(2);
  LACT_CHECK(column_offset + heads * head_dim <= width && dst.numel() == views * heads * tokens * head_dim,
             "split_heads", shape_string(src.shape()) + " -> " + shape_string(dst.shape()));
}

void split_heads_silu(const Backend& be, const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                      const Tensor& dst) {
  const char* op = "split_heads_silu";
  on_backend_any_type(be, op, {&src, &dst});
  LACT_CHECK(src.rank() == 3 && column_offset >= 0 && heads >= 0 && head_dim > 0, op,
             "source " + shape_string(src.shape()) + " is not [views, tokens, channels], or head_dim " +
                 std::to_string(head_dim) + " is not positive");
  const int64_t views = src.dim(0), tokens = src.dim(1), width = src.dim(2);
  LACT_CHECK(column_offset + heads * head_dim <= width && dst.numel() == views * heads * tokens * head_dim, op,
             shape_string(src.shape()) + " columns [" + std::to_string(column_offset) + ", " +
                 std::to_string(column_offset + heads * head_dim) + ") -> " + shape_string(dst.shape()));
  const char *s = static_cast<const char*>(src.raw()), *d = static_cast<const char*>(dst.raw());
  LACT_CHECK(dst.numel() == 0 || d + dst.bytes() <= s || s + src.bytes() <= d, op, "dst overlaps src");
}

void merge_heads(const Backend& be, const Tensor& src, const Tensor& dst) {
  on_backend(be, "merge_heads", {&src});
  on_backend_any_type(be, "merge_heads", {&dst});
  LACT_CHECK(src.rank() == 4, "merge_heads",
             "source " + shape_string(src.shape()) + " is not [views, heads, tokens, d]");
  same_size(dst, src, "merge_heads");
}

void attention(const Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out) {
  on_backend(be, "attention", {&q, &k, &v, &out});
  const bool ranks = q.rank() == 3 && k.rank() == 3 && v.rank() == 3 && out.rank() == 3;
  LACT_CHECK(ranks && k.dim(0) == q.dim(0) && v.dim(0) == q.dim(0) && k.dim(2) == q.dim(2) && v.dim(1) == k.dim(1) &&
                 out.dim(0) == q.dim(0) && out.dim(1) == q.dim(1) && out.dim(2) == v.dim(2),
             "attention",
             "q " + shape_string(q.shape()) + ", k " + shape_string(k.shape()) + ", v " + shape_string(v.shape()) +
                 ", out " + shape_string(out.shape()));
}

void attention_packed(const Backend& be, const Tensor& qkv, int64_t heads, int64_t head_dim, const Tensor& out) {
  on_backend_any_type(be, "attention_packed", {&qkv, &out});
  same_type(qkv, out, "attention_packed");
  const int64_t dim = heads * head_dim;
  LACT_CHECK(qkv.rank() == 3 && heads > 0 && head_dim > 0 && qkv.dim(2) == 3 * dim && out.rank() == 3 &&
                 out.dim(0) == qkv.dim(0) && out.dim(1) == qkv.dim(1) && out.dim(2) == dim,
             "attention_packed",
             "qkv " + shape_string(qkv.shape()) + " is not [views, tokens, 3 x " + std::to_string(heads) + " heads x " +
                 std::to_string(head_dim) + "], or out " + shape_string(out.shape()) + " is not [views, tokens, " +
                 std::to_string(dim) + "]");
  const char *q = static_cast<const char*>(qkv.raw()), *o = static_cast<const char*>(out.raw());
  LACT_CHECK(out.numel() == 0 || o + out.bytes() <= q || q + qkv.bytes() <= o, "attention_packed", "out overlaps qkv");
}

void ray_tokens(const Backend& be, const std::vector<RayPose>& poses, const Tensor* images, int height, int width,
                int patch, const Tensor& tokens) {
  on_backend(be, "ray_tokens", {images, &tokens});
  const int64_t views = static_cast<int64_t>(poses.size());
  LACT_CHECK(patch > 0 && height > 0 && width > 0 && height % patch == 0 && width % patch == 0 &&
                 tokens.numel() == views * static_cast<int64_t>(height) * width * 12 &&
                 (!images || images->numel() == views * static_cast<int64_t>(height) * width * 3),
             "ray_tokens",
             std::to_string(views) + " views of " + std::to_string(height) + "x" + std::to_string(width) +
                 " for tokens " + shape_string(tokens.shape()));
}

void ray_tokens(const Backend& be, const Tensor& poses, int height, int width, int patch, const Tensor& tokens) {
  on_backend(be, "ray_tokens", {&poses, &tokens});
  LACT_CHECK(poses.rank() == 2 && poses.dim(1) == kRayPoseFloats, "ray_tokens",
             "poses " + shape_string(poses.shape()) + " are not packed RayPoses");
  LACT_CHECK(patch > 0 && height > 0 && width > 0 && height % patch == 0 && width % patch == 0 &&
                 tokens.numel() == poses.dim(0) * static_cast<int64_t>(height) * width * 12,
             "ray_tokens",
             "poses " + shape_string(poses.shape()) + " at " + std::to_string(height) + "x" + std::to_string(width) +
                 " for tokens " + shape_string(tokens.shape()));
}

namespace {
// One side of a sliding window's output: how many windows of `kernel` fit `size` padded by `padding`, `stride`
// apart (0 when none does).
int64_t windows(int64_t size, int64_t kernel, int64_t stride, int64_t padding) {
  const int64_t span = size + 2 * padding - kernel;
  return span < 0 ? 0 : span / stride + 1;
}
}  // namespace

void conv2d(const Backend& be, const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding,
            const Tensor& y) {
  on_backend(be, "conv2d", {&x, &weight, &bias, &y});
  const auto shapes = [&] {
    return "x " + shape_string(x.shape()) + ", weight " + shape_string(weight.shape()) + ", stride " +
           std::to_string(stride) + ", padding " + std::to_string(padding);
  };
  LACT_CHECK(x.rank() == 4 && weight.rank() == 4 && weight.dim(1) == x.dim(1) && stride > 0 && padding >= 0 &&
                 weight.dim(2) > 0 && weight.dim(3) > 0,
             "conv2d", "not an NCHW input and an OIHW weight: " + shapes());
  const int64_t out_h = windows(x.dim(2), weight.dim(2), stride, padding);
  const int64_t out_w = windows(x.dim(3), weight.dim(3), stride, padding);
  LACT_CHECK(out_h > 0 && out_w > 0, "conv2d", "the kernel is larger than the padded input: " + shapes());
  LACT_CHECK(bias.empty() || (bias.rank() == 1 && bias.dim(0) == weight.dim(0)), "conv2d",
             "bias " + shape_string(bias.shape()) + " for " + std::to_string(weight.dim(0)) + " output channels");
  const Shape expected{x.dim(0), weight.dim(0), out_h, out_w};
  LACT_CHECK(y.shape() == expected, "conv2d",
             "output " + shape_string(y.shape()) + ", expected " + shape_string(expected) + " for " + shapes());
  LACT_CHECK(y.numel() == 0 || y.data() != x.data(), "conv2d", "the output is the input (not an in-place op)");
}

void max_pool2d(const Backend& be, const Tensor& x, int kernel, int stride, const Tensor& y) {
  on_backend(be, "max_pool2d", {&x, &y});
  const std::string shapes =
      "x " + shape_string(x.shape()) + ", kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride);
  LACT_CHECK(x.rank() == 4 && kernel > 0 && stride > 0, "max_pool2d", "not an NCHW input with a window: " + shapes);
  const int64_t out_h = windows(x.dim(2), kernel, stride, 0), out_w = windows(x.dim(3), kernel, stride, 0);
  LACT_CHECK(out_h > 0 && out_w > 0, "max_pool2d", "the window is larger than the input: " + shapes);
  const Shape expected{x.dim(0), x.dim(1), out_h, out_w};
  LACT_CHECK(y.shape() == expected, "max_pool2d",
             "output " + shape_string(y.shape()) + ", expected " + shape_string(expected) + " for " + shapes);
  LACT_CHECK(y.numel() == 0 || y.data() != x.data(), "max_pool2d", "the output is the input (not an in-place op)");
}

void swiglu(const Backend& be, const Tensor& gate, const Tensor& up, const Tensor& out) {
  on_backend(be, "swiglu", {&gate, &up, &out});
  same_size(gate, up, "swiglu");
  same_size(gate, out, "swiglu");
}

void swiglu_backward(const Backend& be, const Tensor& gate, const Tensor& up, const Tensor& dhidden) {
  on_backend(be, "swiglu_backward", {&gate, &up, &dhidden});
  same_size(gate, up, "swiglu_backward");
  same_size(gate, dhidden, "swiglu_backward");
}

void swiglu_backward_packed(const Backend& be, const Tensor& gate_up, const Tensor& dhidden, const float* scale) {
  const char* op = "swiglu_backward_packed";
  on_backend_any_type(be, op, {&gate_up, &dhidden});
  same_type(gate_up, dhidden, op);
  LACT_CHECK(gate_up.rank() == 3 && dhidden.rank() == 3 && gate_up.dim(0) == dhidden.dim(0) &&
                 gate_up.dim(1) == dhidden.dim(1) && gate_up.dim(2) == 2 * dhidden.dim(2),
             op,
             "gate_up " + shape_string(gate_up.shape()) + " is not [batch, rows, 2 cols] for dhidden " +
                 shape_string(dhidden.shape()));
  LACT_CHECK(scale || dhidden.numel() == 0, op, "no scales");
}

void swiglu_packed(const Backend& be, const Tensor& gate_up) {
  on_backend_any_type(be, "swiglu_packed", {&gate_up});
  LACT_CHECK(gate_up.rank() == 3 && gate_up.dim(2) % 2 == 0, "swiglu_packed",
             "gate_up " + shape_string(gate_up.shape()) + " is not [batch, rows, 2 cols]");
}

void batched_dot(const Backend& be, const Tensor& a, const Tensor& b) {
  on_backend(be, "batched_dot", {&a, &b});
  same_size(a, b, "batched_dot");
  LACT_CHECK(a.rank() >= 1, "batched_dot", "operands need a batch dimension");
}

void column_norms(const Backend& be, const Tensor& w, const Tensor& norms) {
  on_backend(be, "column_norms", {&w, &norms});
  LACT_CHECK(w.rank() == 3 && norms.numel() == w.dim(0) * w.dim(2), "column_norms",
             "w " + shape_string(w.shape()) + ", norms " + shape_string(norms.shape()));
}

void restore_column_norms(const Backend& be, const Tensor& w, const Tensor& target) {
  on_backend(be, "restore_column_norms", {&w, &target});
  LACT_CHECK(w.rank() == 3 && target.numel() == w.dim(0) * w.dim(2), "restore_column_norms",
             "w " + shape_string(w.shape()) + ", target " + shape_string(target.shape()));
}

void scale_batched(const Backend& be, const Tensor& x, const std::vector<float>& scale) {
  on_backend(be, "scale_batched", {&x});
  LACT_CHECK(x.rank() >= 1 && static_cast<int64_t>(scale.size()) == x.dim(0), "scale_batched", "one scale per batch");
}

}  // namespace lact::checks
