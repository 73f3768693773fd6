// `lact bench --gemm-libraries`: the model's own matrix-product shapes timed on every library the CPU backend can
// use (OpenBLAS fp32, oneDNN fp32, oneDNN bf16) in one run, the numbers behind the CPU backend's choice of
// oneDNN for fp32 (kernels/cpu/dnnl_gemm.h).
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_inputs.h"
#include "bench/bench_run.h"
#include "core/module_kind.h"
#include "kernels/backend_factory.h"
#include "kernels/cpu/dnnl_gemm.h"
#include "system/error.h"
#include "system/thread_limit.h"

namespace lact::bench {

namespace {

// The products of one encode at `tokens` input tokens (`per_view` tokens per view), as each module kind lists them.
std::vector<GemmShape> model_shapes(const ModelConfig& c, int64_t tokens, int64_t per_view) {
  std::vector<GemmShape> shapes;
  for (const ModuleConfig& m : c.block)
    for (const GemmShape& s : m.kind->gemm_shapes(c, m, tokens, per_view)) shapes.push_back(s);
  return shapes;
}

// GFLOP/s of the best of `repeat` runs after a warm-up, on random operands.
double time_shape(Backend& be, const GemmShape& s, int repeat) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t a_size = s.m * s.k, b_size = s.k * s.n, c_size = s.m * s.n;
  std::vector<float> a(static_cast<size_t>(a_size * s.batch)), b(static_cast<size_t>(b_size * s.batch)),
      c(static_cast<size_t>(c_size * s.batch));
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  const int64_t ldb = s.transpose_b ? s.k : s.n;
  double best = 1e30;
  for (int i = 0; i <= repeat; ++i) {
    const double t = now_seconds();
    be.gemm(false, s.transpose_b, s.m, s.n, s.k, 1.0f, {a.data(), s.k, a_size}, {b.data(), ldb, b_size}, 0.0f, c.data(),
            s.n, c_size, s.batch);
    if (i) best = std::min(best, now_seconds() - t);
  }
  return 2.0 * s.m * s.n * s.k * s.batch / best / 1e9;
}

}  // namespace

void run_gemm_library_bench(const BenchOptions& o) {
  if (o.common.backend != "cpu") throw Error("--gemm-libraries", "compares the CPU backend's libraries (--device cpu)");
  const std::vector<int> views = parse_list(o.views, "--views", 100000);
  const std::vector<std::pair<int, int>> sizes = parse_size_list(o.sizes, "--size", 8192);
  const auto [height, width] = sizes.at(0);  // the first is timed, every one checked
  const ModelConfig config = lact_config(o);
  check_patch_divides(sizes, config.patch_size);
  const int64_t per_view = int64_t(height / config.patch_size) * (width / config.patch_size);
  const int64_t tokens = per_view * views[0];

  struct Library {
    std::string name;
    Precision precision;
    CpuGemmLibrary library;
    std::string unavailable;
  };
  std::vector<Library> libraries = {
      {"OpenBLAS fp32 (" + openblas_core_name() + " kernels)", Precision::Fp32, CpuGemmLibrary::OpenBlas, ""},
      {dnnl_version_text() + " fp32", Precision::Fp32, CpuGemmLibrary::OneDnn, ""},
      {dnnl_version_text() + " bf16", Precision::Bf16, CpuGemmLibrary::Auto, ""}};
  if (!dnnl_available())
    libraries[1].unavailable = libraries[2].unavailable = dnnl_version_text();
  else if (std::string why; !cpu_bf16_available(&why))
    libraries[2].unavailable = why;

  std::printf(
      "lact bench --gemm-libraries: config %s, %d views %dx%d (%lld tokens), %d thread(s), best of %d; "
      "GFLOP/s\n\n| product | m x n x k | batch |",
      o.config.c_str(), views[0], height, width, static_cast<long long>(tokens),
      o.common.threads > 0 ? o.common.threads : usable_cpus(), o.repeat);
  for (const Library& l : libraries) std::printf(" %s |", l.name.c_str());
  std::printf(" oneDNN fp32 / OpenBLAS |\n|---|---|---|");
  for (size_t i = 0; i <= libraries.size(); ++i) std::printf("---|");
  std::printf("\n");
  std::vector<std::unique_ptr<Backend>> backends;
  for (const Library& l : libraries)
    backends.push_back(l.unavailable.empty() ? make_cpu_backend(o.common.threads, l.precision, l.library) : nullptr);
  for (const GemmShape& s : model_shapes(config, tokens, per_view)) {
    std::printf("| %s | %lld x %lld x %lld | %lld |", s.name.c_str(), static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(s.batch));
    std::vector<double> rates;
    for (auto& be : backends) {
      rates.push_back(be ? time_shape(*be, s, o.repeat) : 0.0);
      if (be)
        std::printf(" %.1f |", rates.back());
      else
        std::printf(" - |");
    }
    if (rates[0] > 0 && rates[1] > 0)
      std::printf(" %.2fx |\n", rates[1] / rates[0]);
    else
      std::printf(" - |\n");
    std::fflush(stdout);
  }
  for (const Library& l : libraries)
    if (!l.unavailable.empty()) std::printf("\n%s: %s", l.name.c_str(), l.unavailable.c_str());
  std::printf("\nThe CPU backend runs fp32 products on %s.\n",
              dnnl_available() ? "oneDNN (this build has it)" : "OpenBLAS (this build has no oneDNN)");
}

}  // namespace lact::bench
