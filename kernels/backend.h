// The compute interface every backend implements (the CPU's with OpenBLAS, CUDA's with cuBLAS and our kernels).
// Each op is a public non-virtual member that runs the op's operand checks (kernels/op_checks.h) and then calls
// the backend's private `do_` hook (kernels/backend_ops.cpp): a backend implements only the hooks, so no backend
// can skip or forget a check.
// The model is written once against these ops; each op is tested on every backend against naive loops.
// Tensors are row-major, contiguous, and live in the backend's memory; float32, except that a backend that
// stores bf16 (stores_bf16(): the CUDA backend at bf16) takes bf16 activations in the ops that say so.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ray_tokens.h"
#include "kernels/tensor.h"

namespace lact {

// One operand of a (batched) matrix product: `batch` matrices of rows x cols (before any
// transpose), row stride `ld`, `stride` elements between consecutive matrices (0 = shared).
// How matrix products are computed. Storage is float32 always; tf32 and bf16 round the operands of the
// tensor-core products (CUDA only) and accumulate in float32.
enum class Precision { Fp32, Tf32, Bf16 };
std::string precision_name(Precision p);
// "fp32" | "tf32" | "bf16"; throws std::invalid_argument otherwise.
Precision parse_precision(const std::string& name);

struct MatrixOperand {
  const float* data;
  int64_t ld;
  int64_t stride;
};
// The same for an operand of bf16 storage (gemm_bf16): data points into a bf16 tensor, ld and stride in elements.
struct Bf16Operand {
  const void* data;
  int64_t ld;
  int64_t stride;
};

// Device time spent in one kind of op during profiling.
struct OpProfile {
  std::string op;
  int64_t calls = 0;
  double milliseconds = 0;
  double gflop = 0;  // the FLOPs of matrix products (0: not counted), for a rate per product shape
};

// A recorded sequence of ops (a CUDA graph): replayed on the same buffers, whose contents may change.
class Recording {
 public:
  virtual ~Recording() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual void set_threads(int threads) = 0;
  virtual void synchronize() {}
  virtual Precision precision() const { return Precision::Fp32; }
  // Whether empty() takes DType::BF16 here (the CUDA backend's; the CPU keeps float32 only).
  virtual bool stores_bf16() const { return false; }
  // The storage type the model gives the activations between products that may be bf16 (the window attention's
  // packed qkv and output, the MLP's hidden layer, the TTT layer's projection output and merged heads): BF16 on the
  // CUDA backend at bf16 unless LACT_BF16_ACTIVATIONS=0, F32 elsewhere. The residual stream and norms' outputs,
  // the TTT layer's q, k, v, fast-weight products and updates, and the state stay float32.
  virtual DType activation_type() const { return DType::F32; }
  // One line about the device, e.g. "NVIDIA H200, sm_90, 139.8 GiB" or "CPU, 2 threads".
  virtual std::string device_description() const = 0;
  // Bytes the backend can still allocate (-1 when unknown), for the memory estimate before an encode.
  virtual int64_t available_memory() const = 0;
  // What the memory checks use: available_memory(), at most the cap a run set (--memory-limit; -1: none).
  int64_t usable_memory() const {
    const int64_t available = available_memory();
    if (memory_cap_ < 0) return available;
    return available < 0 ? memory_cap_ : std::min(available, memory_cap_);
  }
  void set_memory_cap(int64_t bytes) { memory_cap_ = bytes; }
  // Bytes of tensors alive now, and the most alive at once since reset_peak_memory() (-1: not tracked).
  virtual int64_t allocated_memory() const { return -1; }
  virtual int64_t peak_memory() const { return -1; }
  virtual void reset_peak_memory() {}
  // Returns to the system the freed blocks a backend holds for reuse (the CPU's, kernels/cpu/block_pool.h): the
  // memory check calls it before reading what the process holds, so held blocks are not counted twice.
  virtual void release_held_memory() const {}
  // The caller repeats a step (an encode's layer) that keeps `bytes` more each time (the layer's state): the most
  // alive at once since the previous call, plus `bytes` still to come, is what the caller will hold at its peak.
  // A backend that holds freed blocks for reuse may count that peak now, so that the growth does not evict the
  // blocks every step reuses (kernels/cpu/block_pool.h). Call it with 0 before the first step.
  virtual void expect_growth(int64_t /*bytes*/) {}
  // The step since the last expect_growth or hold_step_blocks call (a render's first layer) repeats with the same
  // allocations: a backend that holds freed blocks may keep every block the step allocated, not only as many as
  // were alive at once, so that the next steps map none afresh (a render of 2 views mapped 72 blocks of 1.5-6 MiB
  // a frame, a quarter of its time). The peak then counts them all: one step's allocations, once.
  virtual void hold_step_blocks() {}
  // Per-op device timing (events around every op on CUDA, a clock around every op on the CPU; slows the work a
  // little): start, run, stop. Returns false where the backend does not measure.
  virtual bool start_profiling() { return false; }
  // The ops since start_profiling(), most time first.
  virtual std::vector<OpProfile> stop_profiling() { return {}; }

  // ---- memory
  Tensor empty(const Shape& shape, DType dtype = DType::F32);
  Tensor zeros(const Shape& shape);
  Tensor from_host(const Shape& shape, const float* host);
  std::vector<float> to_host(const Tensor& t);
  void upload(Tensor& dst, const float* host);
  // A tensor of host memory that `storage` keeps alive (a mapped file): used in place by a backend that
  // computes in host memory, copied into device memory by the others.
  virtual Tensor adopt_host(const Shape& shape, std::shared_ptr<float> storage) {
    return from_host(shape, storage.get());
  }
  // `t`'s values do not change while it lives (a model weight): the backend may keep copies derived from it
  // (the CPU's bf16 products keep it converted to bf16 instead of converting it at every product).
  virtual void mark_constant(const Tensor& /*t*/) {}
  // upload and download convert between the host's floats and a bf16 tensor's storage (rounding to nearest even).
  void download(const Tensor& src, float* host);
  void copy(Tensor& dst, const Tensor& src);  // between storage types: rounded to bf16, or widened (exact)
  void fill(Tensor& t, float value);          // either storage type
  // For i in [0, count): copy `block` floats from src + i*src_stride to dst + i*dst_stride (device memory).
  void copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block, int64_t count);

  // ---- matrix products
  // For b in [0, batch): C_b = alpha * op(A_b) * op(B_b) + beta * C_b, with op(A_b) m x k,
  // op(B_b) k x n and C_b m x n (row-major). beta = 0 ignores C's old contents (NaN included).
  void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, MatrixOperand a,
            MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch);

  // gemm() on bf16 operands (A and B in bf16 tensors) with float32 accumulation, C float32 or bf16 (c_type): the
  // TTT layer's fast-weight products on bf16 activations. A backend that stores bf16 implements it.
  void gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, Bf16Operand a,
                 Bf16Operand b, float beta, void* c, DType c_type, int64_t ldc, int64_t stride_c, int64_t batch);
  // y [rows, out] = x [rows, in] W^T for x and y of either storage type (the linear() below calls it when one is
  // bf16): the product on bf16 operands (a float32 x rounded to bf16, the weight's bf16 copy) with float32
  // accumulation, y rounded to its type. weight [out, in] float32. beta 1 adds the product into y (linear_add).
  void linear_bf16(const Tensor& x, const Tensor& weight, Tensor& y, float beta = 0.0f);

  // ---- elementwise and row ops (in place unless an output is given)
  void add(Tensor& y, const Tensor& x);                      // y += x
  void axpby(Tensor& y, float a, const Tensor& x, float b);  // y = a*x + b*y
  void add_scaled_identity(Tensor& y, float a);              // y[b] += a*I, y = [batch, n, n]
  // The activations take either storage type (computed in float32, stored rounded).
  void silu(Tensor& x);
  void gelu(Tensor& x);  // exact (erf) GELU
  void sigmoid(Tensor& x);
  void softplus(Tensor& x, float shift);         // x = log(1 + exp(x + shift))
  void add_bias(Tensor& x, const Tensor& bias);  // x[r, :] += bias
  // LayerNorm without bias over the last dimension of x: y = (x - mean) / sqrt(var + eps) * weight. x float32; y
  // float32 or bf16 (computed in float32, stored rounded: for a module whose products read y, BlockModule::input_type).
  void layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y);
  // RMSNorm over consecutive groups of `group` elements, weight of size `group`:
  // y = x / sqrt(mean(x^2) + eps) * weight. x float32; y float32 or bf16 (stored rounded).
  void rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y);
  // The same RMSNorm in place on a column range of every row: x [..., width], columns [column_offset,
  // column_offset + columns) in groups of weight.numel() (the qk norm on the packed qkv projection output). x of
  // either storage type.
  void rms_norm_columns(Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight, float eps);
  // x = x / (||x||_2 + eps) over consecutive groups of `group` elements (eps added to the norm); either type.
  void l2_normalize(Tensor& x, int64_t group, float eps);
  // x[b, t, :] *= scale[b * scale_batch_stride + t * scale_row_stride]; x = [batch, rows, cols].
  void scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride);

  // ---- layout
  // src [views, tokens, C]; dst [views, heads, tokens, head_dim] taking columns
  // [column_offset, column_offset + heads*head_dim) of src. src and dst of either storage type.
  void split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, Tensor& dst);
  // The TTT layer's heads in one pass (issue 51 item 4): dst = split_heads(silu(src)) as split_heads takes its
  // columns, then, where l2_eps >= 0, each head_dim group x of dst = x / (||x||_2 + l2_eps) (l2_eps < 0: no norm).
  // src is not modified. src and dst of either storage type. The same bits as silu(src) in place, split_heads and
  // l2_normalize(dst, head_dim, l2_eps) on the same backend: SiLU in float rounded to src's type and then dst's, the
  // norm in float from those rounded values with l2_normalize's order of sums, rounded to dst's type on the store.
  void split_heads_silu(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim, float l2_eps,
                        Tensor& dst);
  // src [views, heads, tokens, head_dim] -> dst [views, tokens, heads*head_dim]; src float32, dst either type.
  void merge_heads(const Tensor& src, Tensor& dst);

  // ---- attention: out[b] = softmax(q[b] k[b]^T * scale) v[b]; q, k, v, out = [batch, tokens, d].
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out);
  // The same per view and head, read straight from the packed qkv projection output: qkv [views, tokens, 3 dim]
  // with dim = heads x head_dim holds head h's q at columns [h head_dim, (h + 1) head_dim), its k at dim + those,
  // its v at 2 dim + those; head h's output goes to columns [h head_dim, (h + 1) head_dim) of out [views, tokens,
  // dim] (no split_heads or merge_heads around it). out must not overlap qkv. qkv and out of one storage type,
  // either.
  void attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out);

  // ---- convolution and pooling (NCHW, as PyTorch's conv2d and max_pool2d; for the LPIPS metric, core/lpips.h)
  // y = conv(x, weight) + bias, then max(y, 0) where `relu`: x [N, C, H, W], weight [O, C, KH, KW], bias [O] or
  // an empty tensor (none), `padding` zeros on every side, `stride` both ways; y [N, O, Ho, Wo] with
  // Ho = (H + 2 padding - KH) / stride + 1 (rounded down), Wo likewise.
  void conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu, Tensor& y);
  // y = the maximum over kernel x kernel windows `stride` apart, every window inside x (no padding, PyTorch's
  // ceil_mode=False): x [N, C, H, W], y [N, C, (H - kernel) / stride + 1, (W - kernel) / stride + 1].
  void max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y);

  // ---- tokens
  // The input tokens of views of one size (core/tokens.h's layout): tokens [views * (H/p)(W/p), p*p*12], one
  // pose per view (host memory), images [views, H, W, 3] in [0, 1] or null (targets: zero colour).
  void ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width, int patch,
                  Tensor& tokens);
  // The same for target views with the poses already in backend memory: `poses` [views, kRayPoseFloats]
  // holds the RayPose structs' bytes (see pack_poses), so a recording can take new poses by upload.
  void ray_tokens(const Tensor& poses, int height, int width, int patch, Tensor& tokens);

  // ---- recording (CUDA graphs, for the render path's many short launches); use RecordingScope below
  // Starts recording: the ops issued until end_recording() are captured, not run. Returns false where the
  // backend cannot record (the CPU's). While recording, ops that move data to or from the host (upload,
  // download, batched_dot, scale_batched, ray_tokens from host poses, synchronize) throw.
  virtual bool begin_recording() { return false; }
  // Whether begin_recording() can ever succeed here (so callers skip preparing a recording otherwise).
  virtual bool can_record() const { return false; }
  // Refuse recordings from now on (lact --no-graphs), e.g. to compare against direct launches.
  virtual void disable_recording() {}
  // Ends recording. Null when the capture failed: then none of the ops ran; run them directly.
  virtual std::unique_ptr<Recording> end_recording() { return nullptr; }
  // Runs a recording of this backend (queued like any op).
  virtual void replay(const Recording& recording);

  // ---- SwiGLU fast-weight pieces
  // out = silu(gate) * up (out may alias gate).
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& out);
  // The TTT inner backward. In: gate = K W0, up = K W2, dhidden = V W1^T. Out, in place:
  // gate <- dL/dgate (through SiLU), up <- silu(gate) * up (the hidden), dhidden <- dhidden * silu(gate).
  void swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden);
  // The same on the packed product of [W0|W2], with the per-row scales folded in (one pass, issue 51 item 4).
  // In: gate_up [batch, rows, 2 cols] = [K W0 | K W2] (gate in columns [0, cols), up in [cols, 2 cols)),
  // dhidden [batch, rows, cols] = V W1^T. Out, in place: gate_up <- [s0 dL/dgate | s2 dL/dup] and dhidden <- s1
  // silu(gate) up (the hidden), so that one product K^T gate_up gives [dW0 | dW2]. Row (b, r)'s s0 is
  // scale[b * scale_batch_stride + r * scale_row_stride], s1 the scale scale_part_stride after it, s2 the one
  // 2 scale_part_stride after (the TTT layer's per-token learning rates lr0, lr1, lr2). The same values as
  // swiglu_backward and then scale_rows on each output. gate_up and dhidden of one storage type, either.
  void swiglu_backward_packed(Tensor& gate_up, Tensor& dhidden, const float* scale, int64_t scale_part_stride,
                              int64_t scale_batch_stride, int64_t scale_row_stride);
  // SwiGLU on the packed product: gate_up [batch, rows, 2 cols] as above; columns [0, cols) <- silu(gate) * up
  // (read next with leading dimension 2 cols), columns [cols, 2 cols) unchanged. Either storage type.
  void swiglu_packed(Tensor& gate_up);

  // ---- reductions
  // For each of the batch matrices (first dim): sum over elements of a*b, in double.
  std::vector<double> batched_dot(const Tensor& a, const Tensor& b);
  // norms[b, c] = ||w[b, :, c]||_2 for w [batch, rows, cols].
  void column_norms(const Tensor& w, Tensor& norms);
  // w[b, :, c] *= target[b, c] / (||w[b, :, c]||_2 + eps).
  void restore_column_norms(Tensor& w, const Tensor& target, float eps);
  // x[b] *= scale[b] for x [batch, ...].
  void scale_batched(Tensor& x, const std::vector<float>& scale);

 private:
  // The ops as each backend implements them: called by the public op of the same name once its operand checks
  // (kernels/op_checks.h) have passed, so a hook may assume well-formed operands on this backend.
  virtual Tensor do_empty(const Shape& shape, DType dtype) = 0;
  virtual void do_upload(Tensor& dst, const float* host) = 0;
  virtual void do_download(const Tensor& src, float* host) = 0;
  virtual void do_copy(Tensor& dst, const Tensor& src) = 0;
  virtual void do_fill(Tensor& t, float value) = 0;
  virtual void do_copy_blocks(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t block,
                              int64_t count) = 0;
  virtual void do_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                       MatrixOperand a, MatrixOperand b, float beta, float* c, int64_t ldc, int64_t stride_c,
                       int64_t batch) = 0;
  virtual void do_linear_bf16(const Tensor& x, const Tensor& weight, Tensor& y, float beta);  // default: throws
  virtual void do_gemm_bf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                            Bf16Operand a, Bf16Operand b, float beta, void* c, DType c_type, int64_t ldc,
                            int64_t stride_c, int64_t batch);  // default: throws (no bf16)
  virtual void do_add(Tensor& y, const Tensor& x) = 0;
  virtual void do_axpby(Tensor& y, float a, const Tensor& x, float b) = 0;
  virtual void do_add_scaled_identity(Tensor& y, float a) = 0;
  virtual void do_silu(Tensor& x) = 0;
  virtual void do_gelu(Tensor& x) = 0;
  virtual void do_sigmoid(Tensor& x) = 0;
  virtual void do_softplus(Tensor& x, float shift) = 0;
  virtual void do_add_bias(Tensor& x, const Tensor& bias) = 0;
  virtual void do_layer_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) = 0;
  virtual void do_rms_norm(const Tensor& x, const Tensor& weight, int64_t group, float eps, Tensor& y) = 0;
  virtual void do_rms_norm_columns(Tensor& x, int64_t column_offset, int64_t columns, const Tensor& weight,
                                   float eps) = 0;
  virtual void do_l2_normalize(Tensor& x, int64_t group, float eps) = 0;
  virtual void do_scale_rows(Tensor& x, const float* scale, int64_t scale_batch_stride, int64_t scale_row_stride) = 0;
  virtual void do_split_heads(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                              Tensor& dst) = 0;
  virtual void do_split_heads_silu(const Tensor& src, int64_t column_offset, int64_t heads, int64_t head_dim,
                                   float l2_eps, Tensor& dst) = 0;
  virtual void do_merge_heads(const Tensor& src, Tensor& dst) = 0;
  virtual void do_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale, Tensor& out) = 0;
  virtual void do_attention_packed(const Tensor& qkv, int64_t heads, int64_t head_dim, float scale, Tensor& out) = 0;
  virtual void do_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int stride, int padding, bool relu,
                         Tensor& y) = 0;
  virtual void do_max_pool2d(const Tensor& x, int kernel, int stride, Tensor& y) = 0;
  virtual void do_ray_tokens(const std::vector<RayPose>& poses, const Tensor* images, int height, int width, int patch,
                             Tensor& tokens) = 0;
  virtual void do_ray_tokens(const Tensor& poses, int height, int width, int patch, Tensor& tokens) = 0;
  virtual void do_swiglu(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
  virtual void do_swiglu_backward(Tensor& gate, Tensor& up, Tensor& dhidden) = 0;
  virtual void do_swiglu_backward_packed(Tensor& gate_up, Tensor& dhidden, const float* scale,
                                         int64_t scale_part_stride, int64_t scale_batch_stride,
                                         int64_t scale_row_stride) = 0;
  virtual void do_swiglu_packed(Tensor& gate_up) = 0;
  virtual std::vector<double> do_batched_dot(const Tensor& a, const Tensor& b) = 0;
  virtual void do_column_norms(const Tensor& w, Tensor& norms) = 0;
  virtual void do_restore_column_norms(Tensor& w, const Tensor& target, float eps) = 0;
  virtual void do_scale_batched(Tensor& x, const std::vector<float>& scale) = 0;

  int64_t memory_cap_ = -1;
};

// A recording as a scope: begin_recording() on construction, and end_recording() exactly once, by finish() or,
// when an op threw half way, by the destructor (which discards the capture). The backend holds its lock from
// begin to end, so the scope is what guarantees the lock is released.
class RecordingScope {
 public:
  explicit RecordingScope(Backend& backend) : backend_(backend), active_(backend.begin_recording()) {}
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
  // False where the backend cannot record now (the ops then run directly).
  bool recording() const { return active_; }
  // The recording (null when the capture failed: none of the ops ran). Call once, while recording().
  std::unique_ptr<Recording> finish();

 private:
  Backend& backend_;
  bool active_;
};

// RayPose structs as the float tensor rows that ray_tokens(const Tensor&, ...) reads.
constexpr int64_t kRayPoseFloats = sizeof(RayPose) / sizeof(float);
static_assert(sizeof(RayPose) % sizeof(float) == 0, "RayPose must pack into floats");
std::vector<float> pack_poses(const std::vector<RayPose>& poses);

// Shorthand products on whole tensors (see gemm for the convention).
// y [rows, out] = x [rows, in] * W^T for a PyTorch Linear weight W [out, in].
void linear(Backend& be, const Tensor& x, const Tensor& weight, Tensor& y);
// y += x * W^T in the product itself (beta 1): a block's output projection adding into the residual stream, with
// no separate pass over it.
void linear_add(Backend& be, const Tensor& x, const Tensor& weight, Tensor& y);
// C[b] = alpha * op(A[b]) op(B[b]) + beta * C[b] on 3-D tensors (a 2-D operand is shared by every b).
void matmul(Backend& be, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& c,
            float alpha = 1.0f, float beta = 0.0f);

}  // namespace lact
