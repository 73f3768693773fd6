// The cuDNN SDPA path's pieces that run without a GPU: the tensor descriptors' dims, strides, uids and staging
// offsets for given shapes (worked out by hand), the shapes and versions refused, LACT_ATTENTION's parsing, and,
// where the build has cuDNN's headers, the library loader's refusals (no library, a too old one, one missing an
// entry point) against stand-in libraries (tests/fake_cudnn) and, where the machine has cuDNN itself, the real
// library finalizing the descriptors and the SDPA operation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/cudnn_sdpa_plan.h"
#ifdef LACT_HAVE_CUDNN
#include "kernels/cuda/cudnn_library.h"
#include "kernels/cuda/cudnn_sdpa.h"
#endif

namespace lact::cuda {
namespace {

using Dims = std::array<int64_t, 4>;

// The backend's own layout: q, k, v, out [batch, tokens, dim] one after the other, each on a 128-element boundary.
TEST(CudnnSdpaPlan, StagedOperandsOfTheAttentionOp) {
  // 3 x 5 queries x 8 = 120 elements (padded to 128); 3 x 7 keys x 8 = 168 (padded to 256).
  const SdpaGraphPlan p = plan_staged_sdpa({3, 5, 7, 8});
  EXPECT_EQ(p.q.uid, 1);
  EXPECT_EQ(p.k.uid, 2);
  EXPECT_EQ(p.v.uid, 3);
  EXPECT_EQ(p.o.uid, 4);
  EXPECT_EQ(p.scale_uid, 5);
  EXPECT_EQ(p.q.dims, (Dims{3, 1, 5, 8}));
  EXPECT_EQ(p.q.strides, (Dims{40, 8, 8, 1}));
  EXPECT_EQ(p.k.dims, (Dims{3, 1, 7, 8}));
  EXPECT_EQ(p.k.strides, (Dims{56, 8, 8, 1}));
  EXPECT_EQ(p.v.dims, p.k.dims);
  EXPECT_EQ(p.v.strides, p.k.strides);
  EXPECT_EQ(p.o.dims, p.q.dims);
  EXPECT_EQ(p.o.strides, p.q.strides);
  EXPECT_EQ(p.q.offset, 0);
  EXPECT_EQ(p.k.offset, 128);
  EXPECT_EQ(p.v.offset, 128 + 256);
  EXPECT_EQ(p.o.offset, 128 + 256 + 256);
  EXPECT_EQ(p.buffer_elements, 128 + 256 + 256 + 128);
  // A chunk of the paper's setting: 64 view-heads, 4096 tokens, head dim 64: 16,777,216 elements an operand.
  const SdpaGraphPlan big = plan_staged_sdpa({64, 4096, 4096, 64});
  EXPECT_EQ(big.q.strides, (Dims{262144, 64, 64, 1}));
  EXPECT_EQ(big.o.offset, 3 * 16777216);
  EXPECT_EQ(big.buffer_elements * 2, 4 * 16777216 * 2);  // 128 MiB of bf16 staging
}

// The staging stays within its budget: one view-head at 4096 tokens x 64 stages 4 x 512 KiB = 2 MiB (+ padding).
TEST(CudnnSdpaPlan, ChunksBoundTheStaging) {
  const int64_t mib = int64_t(1) << 20;
  EXPECT_EQ(sdpa_chunk_batch({576, 4096, 4096, 64}, 128 * mib), 64);  // 9 calls of one shape
  EXPECT_EQ(sdpa_chunk_batch({576, 4096, 4096, 64}, 128 * mib - 1), 63);
  // 3 x 8000 elements an operand pad to 24,064: 192,000 bytes hold 3 entries' data but not their padding.
  EXPECT_EQ(sdpa_chunk_batch({3, 1000, 1000, 8}, 192000), 2);
  EXPECT_EQ(sdpa_chunk_batch({3, 1000, 1000, 8}, 192512), 3);
  EXPECT_EQ(sdpa_chunk_batch({10, 4096, 4096, 64}, 128 * mib), 10);      // all at once
  EXPECT_EQ(sdpa_chunk_batch({3, 1 << 20, 1 << 20, 64}, 128 * mib), 1);  // never less than one
  for (const SdpaShape& s : {SdpaShape{576, 4096, 4096, 64}, SdpaShape{370, 300, 500, 16}}) {
    const int64_t chunk = sdpa_chunk_batch(s, 16 * mib);
    ASSERT_LT(chunk, s.batch);
    EXPECT_LE(plan_staged_sdpa({chunk, s.queries, s.keys, s.dim}).buffer_elements * 2, 16 * mib);
    EXPECT_GT(plan_staged_sdpa({chunk + 1, s.queries, s.keys, s.dim}).buffer_elements * 2, 16 * mib);
  }
}

// Q, K, V as views of the packed projection output [views, tokens, 3 * heads * head_dim], O into [views, tokens,
// heads * head_dim]: element (view b, head h, token s, column e) of Q is qkv[b][s][h * head_dim + e].
TEST(CudnnSdpaPlan, PackedProjectionViews) {
  const SdpaGraphPlan p = plan_packed_sdpa(2, 10, 3, 16);  // width 48, rows of 144
  EXPECT_EQ(p.q.dims, (Dims{2, 3, 10, 16}));
  EXPECT_EQ(p.q.strides, (Dims{1440, 16, 144, 1}));
  EXPECT_EQ(p.k.strides, p.q.strides);
  EXPECT_EQ(p.v.strides, p.q.strides);
  EXPECT_EQ(p.q.offset, 0);
  EXPECT_EQ(p.k.offset, 48);
  EXPECT_EQ(p.v.offset, 96);
  EXPECT_EQ(p.o.dims, (Dims{2, 3, 10, 16}));
  EXPECT_EQ(p.o.strides, (Dims{480, 16, 48, 1}));
  EXPECT_EQ(p.o.offset, 0);
  EXPECT_EQ(p.buffer_elements, 2 * 10 * 144);
  // V of view 1, head 2, token 7, column 5 is qkv[1][7][96 + 2 * 16 + 5]: the strides say the same.
  const int64_t via_strides = p.v.offset + 1 * p.v.strides[0] + 2 * p.v.strides[1] + 7 * p.v.strides[2] + 5;
  EXPECT_EQ(via_strides, (1 * 10 + 7) * 144 + 96 + 32 + 5);
}

// What the backend stages for Backend::attention_packed (a shape with heads): the bf16 copy of qkv first (Q, K, V
// views of it as above), O after it on a 128-element boundary. plan_sdpa picks the layout by the shape's heads, and
// the chunks of views bound that staging.
TEST(CudnnSdpaPlan, StagedPackedProjection) {
  const SdpaShape shape{2, 10, 10, 16, 3};
  const SdpaGraphPlan p = plan_staged_packed_sdpa(shape), views = plan_packed_sdpa(2, 10, 3, 16);
  for (const auto& [staged, view] : {std::pair{p.q, views.q}, {p.k, views.k}, {p.v, views.v}}) {
    EXPECT_EQ(staged.dims, view.dims);
    EXPECT_EQ(staged.strides, view.strides);
    EXPECT_EQ(staged.offset, view.offset);
  }
  EXPECT_EQ(p.o.dims, views.o.dims);
  EXPECT_EQ(p.o.strides, (Dims{480, 16, 48, 1}));
  EXPECT_EQ(p.o.offset, 2944);                // qkv's 2 x 10 x 144 = 2880 elements, padded to 23 x 128
  EXPECT_EQ(p.buffer_elements, 2944 + 1024);  // O's 960 padded to 1024
  const SdpaGraphPlan picked = plan_sdpa(shape), split = plan_sdpa({3, 5, 7, 8});
  EXPECT_EQ(picked.o.offset, p.o.offset);
  EXPECT_EQ(picked.k.strides, p.k.strides);
  EXPECT_EQ(split.k.strides, plan_staged_sdpa({3, 5, 7, 8}).k.strides);
  EXPECT_EQ(split.buffer_elements, plan_staged_sdpa({3, 5, 7, 8}).buffer_elements);
  // The paper's setting: a 4096-token view of 12 heads of 64 stages 4096 x (2304 + 768) x 2 bytes = 24 MiB, so 5
  // views a call within 128 MiB (10 calls for 48 views).
  const int64_t mib = int64_t(1) << 20;
  EXPECT_EQ(sdpa_chunk_batch({48, 4096, 4096, 64, 12}, 128 * mib), 5);
  EXPECT_EQ(plan_sdpa({5, 4096, 4096, 64, 12}).buffer_elements * 2, 120 * mib);
  EXPECT_EQ(sdpa_chunk_batch({48, 4096, 4096, 64, 12}, 120 * mib - 1), 4);
}

TEST(CudnnSdpaPlan, ShapesTheFusedKernelRefuses) {
  EXPECT_EQ(sdpa_shape_problem({576, 4096, 4096, 64}), "");
  EXPECT_EQ(sdpa_shape_problem({1, 1, 1, 256}), "");
  EXPECT_EQ(sdpa_shape_problem({2, 150, 70, 12}), "head dim 12 is not a multiple of 8");
  EXPECT_EQ(sdpa_shape_problem({1, 10, 10, 264}), "head dim 264 is over 256");
  EXPECT_EQ(sdpa_shape_problem({0, 10, 10, 64}), "an empty attention");
  EXPECT_EQ(sdpa_shape_problem({1, 10, 0, 64}), "an empty attention");
  EXPECT_EQ(sdpa_shape_problem({1 << 16, 1 << 10, 1 << 4, 64}), "more than 2^31 elements in one operand");
  // Packed: the operands are views of all of qkv, 3 x heads as wide as a head.
  EXPECT_EQ(sdpa_shape_problem({64, 4096, 4096, 64, 12}), "");
  EXPECT_EQ(sdpa_shape_problem({256, 4096, 4096, 64, 12}), "more than 2^31 elements in one operand");
  EXPECT_EQ(sdpa_shape_problem({256, 4096, 4096, 64}), "");
  EXPECT_EQ(sdpa_shape_problem({2, 10, 12, 64, 3}), "a packed attention with queries and keys of different counts");
}

TEST(CudnnSdpaPlan, Versions) {
  EXPECT_EQ(cudnn_version_text(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_text(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_problem(91300), "");
  EXPECT_EQ(cudnn_version_problem(91901), "");
  EXPECT_EQ(cudnn_version_problem(91299),
            "cuDNN 9.12.99 is older than 9.13.0, the first with the fused SDPA operation");
  EXPECT_EQ(cudnn_version_text(8907), "8.9.7");
  EXPECT_EQ(cudnn_version_problem(8907), "cuDNN 8.9.7 is older than 9.13.0, the first with the fused SDPA operation");
}

TEST(AttentionChoice, ParsesLactAttention) {
  EXPECT_EQ(parse_attention_choice(nullptr), AttentionChoice::Auto);
  EXPECT_EQ(parse_attention_choice(""), AttentionChoice::Auto);
  EXPECT_EQ(parse_attention_choice("cudnn"), AttentionChoice::Cudnn);
  EXPECT_EQ(parse_attention_choice("own"), AttentionChoice::Own);
  for (const char* bad : {"CUDNN", "cudnn ", "flash", "own,cudnn"}) {
    try {
      parse_attention_choice(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "LACT_ATTENTION: '" + std::string(bad) + "' is not cudnn or own (unset: cudnn where it loads)");
    }
  }
  ::setenv("LACT_ATTENTION", "own", 1);
  EXPECT_EQ(attention_choice_from_environment(), AttentionChoice::Own);
  ::setenv("LACT_ATTENTION", "fast", 1);
  EXPECT_THROW(attention_choice_from_environment(), std::invalid_argument);
  ::unsetenv("LACT_ATTENTION");
  EXPECT_EQ(attention_choice_from_environment(), AttentionChoice::Auto);
}

TEST(AttentionChoice, TheCpuBackendSaysCpu) { EXPECT_EQ(attention_path(*make_cpu_backend(1)), "cpu"); }

#ifdef LACT_HAVE_CUDNN
std::string refusal(const std::vector<std::string>& candidates) {
  try {
    open_cudnn(candidates);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(opened)";
}

TEST(CudnnLoader, RefusesWhatCannotRunTheSdpaGraph) {
  // Nothing to load: the loader's reason, naming the library and what to install.
  const std::string missing = refusal({"/nonexistent/libcudnn.so.9"});
  EXPECT_EQ(missing.rfind("cannot open /nonexistent/libcudnn.so.9 (cuDNN 9.13 or later", 0), 0u) << missing;
  // A cuDNN 9.1: refused by its version before any other symbol is looked up.
  const std::string old = refusal({LACT_FAKE_CUDNN_OLD});
  EXPECT_NE(old.find(": cuDNN 9.1.0 is older than 9.13.0, the first with the fused SDPA operation"), std::string::npos)
      << old;
  EXPECT_NE(old.find("fake_cudnn_old"), std::string::npos) << old;  // the file is named
  // A new version lacking an entry point: named.
  const std::string incomplete = refusal({LACT_FAKE_CUDNN_INCOMPLETE});
  EXPECT_NE(incomplete.find("the loaded library has no cudnnCreate"), std::string::npos) << incomplete;
  // A library that loads but is refused says more than one that is missing, in either order.
  EXPECT_EQ(refusal({"/nonexistent/libcudnn.so.9", LACT_FAKE_CUDNN_OLD}), old);
  EXPECT_EQ(refusal({LACT_FAKE_CUDNN_OLD, "/nonexistent/libcudnn.so.9"}), old);
  EXPECT_EQ(refusal({}), "no cuDNN library to look for");
}

TEST(CudnnLoader, CandidatesFollowLactCudnnLibrary) {
  ::setenv("LACT_CUDNN_LIBRARY", "/some/where/libcudnn.so.9", 1);
  EXPECT_EQ(cudnn_candidates(), std::vector<std::string>{"/some/where/libcudnn.so.9"});
  ::unsetenv("LACT_CUDNN_LIBRARY");
  const std::vector<std::string> usual = cudnn_candidates();
  ASSERT_FALSE(usual.empty());
  EXPECT_EQ(usual.front(), "libcudnn.so.9");  // the library path first, as the loader searches it
}

// The real cuDNN, where this machine has one (the dev machines' toolkit; GPU-less): every descriptor of both layouts
// takes its attributes and finalizes, and the SDPA operation finalizes over them, so the names, types and counts
// cudnn_sdpa.cpp sets are the library's and the operands agree as it checks them (batch, tokens, head dims). The
// graph and the execution plan need a handle, hence a device: tools/gpu_check.sh runs those.
TEST(CudnnRealLibrary, FinalizesTheSdpaOperationOfEachLayout) {
  std::unique_ptr<CudnnLibrary> lib;
  try {
    lib = std::make_unique<CudnnLibrary>(open_cudnn(cudnn_candidates()));
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no cuDNN 9.13 or later here: " << e.what();
  }
  const SdpaShape shapes[] = {
      {576, 4096, 4096, 64},     // split heads, all view-heads of the paper's setting
      {64, 4096, 4096, 64},      // one staging chunk of it
      {5, 4096, 4096, 64, 12},   // packed: one chunk of 48 views, 12 heads of 64
      {48, 1024, 1024, 128, 6},  // packed, head dim 128
      {3, 5, 7, 8},              // queries and keys of different counts
      {2, 10, 10, 16, 3},        // packed, head dim 16
      {1, 1, 1, 256},            // the widest head the fused kernel takes
  };
  for (const SdpaShape& shape : shapes) {
    ASSERT_EQ(sdpa_shape_problem(shape), "");
    EXPECT_NO_THROW(check_sdpa_operation(*lib, plan_sdpa(shape)))
        << shape.batch << " x " << shape.queries << " x " << shape.keys << " x " << shape.dim << ", heads "
        << shape.heads;
  }
  // An output of other token counts than the queries: refused at the operation's finalize, named.
  SdpaGraphPlan wrong = plan_sdpa({2, 10, 10, 16, 3});
  wrong.o.dims[2] = 11;
  try {
    check_sdpa_operation(*lib, wrong);
    ADD_FAILURE() << "an output of 11 tokens for 10 queries was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cuDNN finalize SDPA forward operation: CUDNN_STATUS_BAD_PARAM", 0), 0u)
        << e.what();
  }
}
#endif

}  // namespace
}  // namespace lact::cuda
