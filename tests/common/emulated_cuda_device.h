// The CUDA backend's device over the CPU, for the tests that run kernels/cuda/device_backend.h's code without a GPU
// (test_cuda_emulated, test_cuda_bf16_storage): host memory, the kernel emulator (tests/common/cuda_emulator.h)
// and OpenBLAS in column-major mode standing in for cuBLAS, and a stand-in for cuDNN's fused attention.
// Compile with LACT_CUDA_EMULATION.
#pragma once

#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/attention_library.h"
#include "kernels/cuda/bf16_storage.h"
#include "kernels/cuda/cuda_ops.cuh"
#include "kernels/cuda/cudnn_sdpa_plan.h"
#include "kernels/cuda/gemm_plan.h"

namespace lact::test {

// The GPU backend's own code (kernels/cuda/device_backend.h) over a device made of host memory, the kernel
// emulator and OpenBLAS in column-major mode (standing in for cuBLAS: the same column-major contract).
// Every allocation starts as NaN, like uninitialised device memory at its worst: a read of anything no op
// wrote shows up in the results.
class EmulatedDevice;

// A recording: the work captured between begin_capture and end_capture, and the memory allocated meanwhile
// (owned by the recording, as a CUDA graph owns its memory nodes).
struct EmulatedRecording final : Recording {
  std::vector<std::function<void()>> work;
  std::vector<void*> memory;
  ~EmulatedRecording() override {
    for (void* p : memory) std::free(p);
  }
};

class EmulatedDevice {
 public:
  // Launches run at once, or are recorded while capturing (as a stream does).
  struct Launcher {
    EmulatedDevice* device;
    template <typename... Params, typename... Args>
    void operator()(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
      ++device->launches;
      device->run([=] { cuda_emulation::launch(kernel, grid, block, args...); });
    }
  };

  Launcher& launcher() { return launcher_; }
  std::string description() const { return "CUDA kernel emulator on the CPU"; }
  void synchronize() {}
  int64_t available() const { return -1; }
  int64_t used() const { return -1; }
  int64_t peak() const { return -1; }
  void reset_peak() {}
  std::shared_ptr<float> allocate(int64_t bytes, const Shape&) {
    float* p = static_cast<float*>(std::malloc(bytes ? size_t(bytes) : 1));
    std::memset(p, 0xff, size_t(bytes));  // all ones: a NaN read as float32 and as bf16 alike
    if (capture_) {                       // graph memory: lives as long as the recording
      capture_->memory.push_back(p);
      return std::shared_ptr<float>(p, [](float*) {});
    }
    return std::shared_ptr<float>(p, [](float* q) { std::free(q); });
  }
  // Scratch taken while capturing is graph memory too (as cudaMallocAsync's is): the recording owns it, and the
  // release inside the captured op leaves it to the replays. It starts as NaN too: cudaMallocAsync hands out pool
  // memory as the last user left it.
  void* scratch(size_t bytes) {
    void* p = std::malloc(bytes ? bytes : 1);
    std::memset(p, 0xff, bytes);
    if (capture_) capture_->memory.push_back(p);
    return p;
  }
  void release(void* p) {
    if (!capture_ || std::find(capture_->memory.begin(), capture_->memory.end(), p) == capture_->memory.end())
      std::free(p);
  }
  void to_device(void* dst, const void* host, size_t bytes) { std::memcpy(dst, host, bytes); }
  void to_host(void* host, const void* src, size_t bytes) { std::memcpy(host, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) {
    run([=] { std::memmove(dst, src, bytes); });
  }
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows) {
    run([=] {
      for (size_t r = 0; r < rows; ++r)
        std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
    });
  }
  // At tf32 and bf16 the operands are rounded (to nearest even) to 10 and 7 mantissa bits first, as the
  // tensor cores see them; products and sums stay float.
  void gemm(const cuda::ColumnMajorGemm& g, float alpha, float beta, Precision precision) {
    ++gemms;
    if (g.a_type == DType::BF16) ++bf16_gemms;
    run([=] { column_major_gemm(g, alpha, beta, precision); });
  }
  // bf16 operands (linear_bf16's) are widened exactly and a bf16 C rounded back, as cuBLAS's bf16 kernels do.
  static void column_major_gemm(const cuda::ColumnMajorGemm& g, float alpha, float beta, Precision precision) {
    const int64_t a_cols = g.transpose_a ? g.m : g.k, b_cols = g.transpose_b ? g.k : g.n;
    const int64_t a_extent = (a_cols - 1) * g.lda + (g.transpose_a ? g.k : g.m);
    const int64_t b_extent = (b_cols - 1) * g.ldb + (g.transpose_b ? g.n : g.k);
    const int64_t c_extent = (g.n - 1) * g.ldc + g.m;
    for (int64_t x = 0; x < g.batch; ++x) {
      std::vector<float> ra = widen(g.a, g.a_type, x * g.stride_a, a_extent);
      std::vector<float> rb = widen(g.b, g.b_type, x * g.stride_b, b_extent);
      std::vector<float> rc = widen(g.c, g.c_type, x * g.stride_c, c_extent);
      if (precision != Precision::Fp32 && g.a_type == DType::F32) {
        for (float& v : ra) v = round_mantissa(v, precision == Precision::Bf16 ? 7 : 10);
        for (float& v : rb) v = round_mantissa(v, precision == Precision::Bf16 ? 7 : 10);
      }
      cblas_sgemm(CblasColMajor, g.transpose_a ? CblasTrans : CblasNoTrans, g.transpose_b ? CblasTrans : CblasNoTrans,
                  int(g.m), int(g.n), int(g.k), alpha, ra.data(), int(g.lda), rb.data(), int(g.ldb), beta, rc.data(),
                  int(g.ldc));
      for (int64_t col = 0; col < g.n; ++col)  // only C's m x n entries: the gaps between columns stay as they were
        for (int64_t row = 0; row < g.m; ++row) {
          const int64_t i = col * g.ldc + row;
          if (g.c_type == DType::F32)
            static_cast<float*>(g.c)[x * g.stride_c + i] = rc[i];
          else
            static_cast<uint16_t*>(g.c)[x * g.stride_c + i] = cuda::bf16_bits(rc[i]);
        }
    }
  }
  static std::vector<float> widen(const void* p, DType type, int64_t offset, int64_t count) {
    std::vector<float> out(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      out[i] = type == DType::F32 ? static_cast<const float*>(p)[offset + i]
                                  : cuda::bf16_value(static_cast<const uint16_t*>(p)[offset + i]);
    return out;
  }
  static float round_mantissa(float v, int bits) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    const int drop = 23 - bits;
    u += (1u << (drop - 1)) - 1 + ((u >> drop) & 1u);
    u &= ~((1u << drop) - 1);
    std::memcpy(&v, &u, sizeof v);
    return v;
  }
  // Profiling: the emulated ops are synchronous, so host timestamps stand in for events.
  size_t record_event() {
    events_.push_back(std::chrono::steady_clock::now());
    return events_.size() - 1;
  }
  double elapsed_ms(size_t from, size_t to) {
    return std::chrono::duration<double, std::milli>(events_[to] - events_[from]).count();
  }
  void clear_events() { events_.clear(); }
  // Recording: work is captured, not run, as in CUDA stream capture.
  bool begin_capture() {
    capture_ = std::make_unique<EmulatedRecording>();
    return true;
  }
  std::unique_ptr<Recording> end_capture() {
    ++recordings;
    return std::move(capture_);
  }
  void replay(const Recording& r) {
    ++replays;
    for (const auto& w : static_cast<const EmulatedRecording&>(r).work) w();
  }
  void run(std::function<void()> work) {
    if (capture_)
      capture_->work.push_back(std::move(work));
    else
      work();
  }
  // The fused attention library (a stand-in for cuDNN's, set by a test), or why there is none.
  cuda::AttentionLibrary* attention_library() { return library; }
  std::string attention_unavailable() const { return unavailable; }
  cuda::AttentionLibrary* library = nullptr;
  std::string unavailable = "no attention library in the emulator";
  int64_t gemms = 0, bf16_gemms = 0, launches = 0, recordings = 0, replays = 0;

 private:
  Launcher launcher_{this};
  std::unique_ptr<EmulatedRecording> capture_;
  std::vector<std::chrono::steady_clock::time_point> events_;
};

// A stand-in for cuDNN's fused attention: the exact softmax attention (in double) of the bf16 operands it is handed,
// rounded to bf16, run on the emulated stream (so a recording captures it). It refuses the shapes cuDNN's wrapper
// refuses (sdpa_shape_problem), and a test can make it refuse a head dim or fail its runs.
class FakeAttentionLibrary final : public cuda::AttentionLibrary {
 public:
  explicit FakeAttentionLibrary(EmulatedDevice& device) : device_(&device) {}
  void attach(EmulatedDevice& device) { device_ = &device; }
  std::string name() const override { return "fake 1.0"; }
  bool prepare(const cuda::SdpaShape& shape, std::string* why) override {
    ++prepares;
    if (const std::string problem = cuda::sdpa_shape_problem(shape); !problem.empty()) {  // as cuDNN's wrapper does
      *why = problem;
      return false;
    }
    if (refuse_dim == shape.dim) {
      *why = "head dim " + std::to_string(shape.dim) + " refused by the test";
      return false;
    }
    prepared_.insert(shape);
    return true;
  }
  bool prepared(const cuda::SdpaShape& shape) const override { return prepared_.count(shape) > 0; }
  size_t workspace_bytes(const cuda::SdpaShape&) const override { return 64; }
  bool run(const cuda::SdpaShape& s, const void* q, const void* k, const void* v, void* out, float scale,
           void* workspace, std::string* why) override {
    ++runs;
    if (fail_runs) {
      *why = "the test made it fail";
      return false;
    }
    EXPECT_TRUE(prepared(s));
    EXPECT_NE(workspace, nullptr);
    shapes.push_back(s);
    const auto* qb = static_cast<const __nv_bfloat16*>(q);
    const auto *kb = static_cast<const __nv_bfloat16*>(k), *vb = static_cast<const __nv_bfloat16*>(v);
    auto* ob = static_cast<__nv_bfloat16*>(out);
    device_->run([=] { attention_of_bf16(s, qb, kb, vb, ob, scale); });
    return true;
  }
  // Each operand read through the graph's own dims and strides (plan_sdpa: the split or the packed layout), as
  // cuDNN reads it.
  static void attention_of_bf16(const cuda::SdpaShape& s, const __nv_bfloat16* q, const __nv_bfloat16* k,
                                const __nv_bfloat16* v, __nv_bfloat16* out, float scale) {
    const cuda::SdpaGraphPlan p = cuda::plan_sdpa(s);
    auto index = [](const cuda::SdpaTensorPlan& t, int64_t b, int64_t h, int64_t i, int64_t e) {
      return b * t.strides[0] + h * t.strides[1] + i * t.strides[2] + e * t.strides[3];
    };
    auto at = [](const __nv_bfloat16* x, int64_t i) { return double(__bfloat162float(x[i])); };
    std::vector<double> weights(size_t(s.keys));
    for (int64_t b = 0; b < p.q.dims[0]; ++b)
      for (int64_t h = 0; h < p.q.dims[1]; ++h)
        for (int64_t i = 0; i < s.queries; ++i) {
          double peak = -INFINITY, sum = 0;
          for (int64_t j = 0; j < s.keys; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < s.dim; ++e) dot += at(q, index(p.q, b, h, i, e)) * at(k, index(p.k, b, h, j, e));
            weights[size_t(j)] = dot * scale;
            peak = std::max(peak, weights[size_t(j)]);
          }
          for (double& w : weights) sum += (w = std::exp(w - peak));
          for (int64_t e = 0; e < s.dim; ++e) {
            double o = 0;
            for (int64_t j = 0; j < s.keys; ++j) o += weights[size_t(j)] * at(v, index(p.v, b, h, j, e));
            out[index(p.o, b, h, i, e)] = __float2bfloat16(float(o / sum));
          }
        }
  }
  int64_t prepares = 0, runs = 0, refuse_dim = -1;
  bool fail_runs = false;
  std::vector<cuda::SdpaShape> shapes;  // of the runs that computed

 private:
  EmulatedDevice* device_;
  std::set<cuda::SdpaShape> prepared_;
};

}  // namespace lact::test
