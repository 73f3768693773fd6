// Which code runs the CUDA backend's bf16 attention: a library's fused kernel (cuDNN's SDPA, cudnn_sdpa.h) or our
// own (attention_fa2_kernel.cuh; the older attention_bf16_kernel.cuh with LACT_ATTENTION=wmma), chosen by
// LACT_ATTENTION. Plain C++: the CPU build, the emulator tests and the bench read the choice and the path that ran
// without CUDA.
#pragma once

#include <cstdint>
#include <string>

namespace lact {

class Backend;

namespace cuda {

// LACT_ATTENTION: unset or empty = Auto (the library where it loads and takes the shape, else our kernel). Wmma is
// Own with the older wmma kernel instead of the FlashAttention-2-class one, kept for comparison.
enum class AttentionChoice { Auto, Cudnn, Own, Wmma };
// "cudnn" | "own" | "wmma" | "" (Auto); anything else throws std::invalid_argument naming LACT_ATTENTION and the
// value.
AttentionChoice parse_attention_choice(const char* value);
// The choice in the environment (LACT_ATTENTION), as parse_attention_choice reads it.
AttentionChoice attention_choice_from_environment();
// Why there is no library when the choice was Own or Wmma (said as the reason, never as a warning).
constexpr const char* kAttentionChosenOwn = "LACT_ATTENTION=own";
constexpr const char* kAttentionChosenWmma = "LACT_ATTENTION=wmma";

// Which of our bf16 kernels runs when the library does not: the FlashAttention-2-class one (attention_fa2_kernel.cuh,
// head dims 16, 32, 64, 128) or the older wmma one (attention_bf16_kernel.cuh, 16, 32, 64). Other head dims run the
// fp32 kernel.
enum class OwnAttentionKernel { Fa2, Wmma };
inline OwnAttentionKernel own_attention_kernel(AttentionChoice choice) {
  return choice == AttentionChoice::Wmma ? OwnAttentionKernel::Wmma : OwnAttentionKernel::Fa2;
}
// How the paths name it: "own fa2" or "own wmma".
inline const char* own_attention_name(OwnAttentionKernel kernel) {
  return kernel == OwnAttentionKernel::Wmma ? "own wmma" : "own fa2";
}

// One attention call: out[b] = softmax(q[b] k[b]^T * scale) v[b], q and out [batch, queries, dim], k and v
// [batch, keys, dim], row-major and contiguous (the Backend::attention op's layout): heads = 0. With heads > 0, the
// packed layout of Backend::attention_packed instead: batch views of queries = keys tokens, each row of the qkv
// operand holding `heads` heads' q, then their k, then their v (head dim `dim`), out [batch, queries, heads dim].
struct SdpaShape {
  int64_t batch = 0, queries = 0, keys = 0, dim = 0, heads = 0;
  bool operator<(const SdpaShape& o) const {
    if (batch != o.batch) return batch < o.batch;
    if (queries != o.queries) return queries < o.queries;
    if (keys != o.keys) return keys < o.keys;
    if (dim != o.dim) return dim < o.dim;
    return heads < o.heads;
  }
  bool operator==(const SdpaShape& o) const {
    return batch == o.batch && queries == o.queries && keys == o.keys && dim == o.dim && heads == o.heads;
  }
};

// A library's fused attention on bf16 operands (the backend stages its fp32 tensors as bf16 around it).
class AttentionLibrary {
 public:
  virtual ~AttentionLibrary() = default;
  // e.g. "cudnn 9.19.0"
  virtual std::string name() const = 0;
  // Builds once per shape what running it takes (cuDNN: the graph and its execution plan); false, with the
  // library's reason in `why`, when it cannot run this shape (remembered: asked again, it answers at once).
  virtual bool prepare(const SdpaShape& shape, std::string* why) = 0;
  // Whether prepare(shape) has succeeded before (a recording may only use a prepared shape: preparing allocates
  // and compiles, which a stream capture does not allow).
  virtual bool prepared(const SdpaShape& shape) const = 0;
  // Device bytes of scratch a prepared shape's run needs.
  virtual size_t workspace_bytes(const SdpaShape& shape) const = 0;
  // Queues the attention of a prepared shape on the backend's stream; q, k, v, out are bf16 in device memory, laid
  // out as plan_sdpa(shape) (cudnn_sdpa_plan.h) says, `workspace` holds workspace_bytes(shape). False, with the reason,
  // when the library fails.
  virtual bool run(const SdpaShape& shape, const void* q, const void* k, const void* v, void* out, float scale,
                   void* workspace, std::string* why) = 0;
};

// The largest head dim lact's own CUDA attention kernels take (the fp32 kernel's largest instantiation and fa2's);
// larger ones run only through the library (cuDNN's SDPA: multiples of 8 up to 256) at --precision bf16.
constexpr int64_t kMaxOwnAttentionHeadDim = 128;
// The one line for a head dim over kMaxOwnAttentionHeadDim: the head dim, the paths that take it and, when `here`
// is not empty, why the library cannot run it here.
std::string head_dim_over_own_kernels(int64_t head_dim, const std::string& here);

// A backend that can say which attention code its calls ran (the CUDA backend): `lact info --devices` and the bench
// rows show it; and whether it can run a head dim at all, asked when a model loads.
class AttentionPathSource {
 public:
  virtual ~AttentionPathSource() = default;
  virtual std::string attention_path() const = 0;
  // "" when some path of the backend can run softmax attention of this head dim, else head_dim_over_own_kernels's line.
  virtual std::string attention_head_dim_problem(int64_t head_dim) const = 0;
};

// The backend's attention_head_dim_problem ("" on a backend that is not a source: the CPU runs any head dim).
std::string attention_head_dim_problem(const Backend& backend, int64_t head_dim);
// Throws std::invalid_argument with that line when there is one: the attention modules' load calls it, so a model
// refuses before any work.
void check_attention_head_dim(const Backend& backend, int64_t head_dim);

// The backend's attention path: "cpu" for a backend that is not a source (the CPU's), else the source's answer,
// e.g. "cudnn 9.19.0", "own fa2 (LACT_ATTENTION=own)", "own wmma (LACT_ATTENTION=wmma)".
std::string attention_path(const Backend& backend);

}  // namespace cuda
}  // namespace lact
