#include "bench/bench_reference.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "system/error.h"
#include "system/subprocess.h"
#include "system/thread_limit.h"

#ifndef LACT_SOURCE_DIR
#define LACT_SOURCE_DIR "."
#endif

namespace lact::bench {

void run_reference(const BenchOptions& o, const ModelConfig& lact, const std::vector<Row>& rows) {
  const Row* first = nullptr;
  for (const Row& r : rows)
    if (r.model == "lact" && r.skipped.empty() && !first) first = &r;
  if (!first) throw Error("--reference", "needs a LaCT row that ran");
  if (first->height != first->width)
    throw Error("--reference", "the PyTorch reference times square views; give a square first --size");
  // The reference builds the same model: lact's config (after --layers / --dim) in the official JSON form.
  const std::vector<std::string> argv = {
      o.python,        std::string(LACT_SOURCE_DIR) + "/tools/reference/bench_reference.py",
      "--config-json", lact.source.dump(),
      "--views-in",    std::to_string(first->views),
      "--views-out",   std::to_string(o.targets),
      "--size",        std::to_string(first->height),
      "--threads",     std::to_string(o.common.threads > 0 ? o.common.threads : usable_cpus()),  // 0: as lact's
      "--repeats",     std::to_string(std::min(o.repeat, 3)),
      "--warmup",      std::to_string(std::min(o.warmup, 1))};
  std::string shown;
  for (const std::string& a : argv) shown += (shown.empty() ? "" : " ") + a;
  std::printf("\nPyTorch reference: %s\n", shown.c_str());
  std::fflush(stdout);
  std::string output;
  run_program(argv, &output);
  const size_t brace = output.rfind('{');
  nlohmann::json ref;
  try {
    ref = nlohmann::json::parse(output.substr(brace == std::string::npos ? 0 : brace));
  } catch (const std::exception&) {
    throw Error("--reference",
                "the PyTorch reference printed no timing JSON (is torch installed for " + o.python + "?)");
  }
  const double ref_encode = ref.at("encode_s").get<double>(), ref_render = ref.at("render_s_per_view").get<double>();
  // One table: the official model's fp32 and every lact precision at that size, each against the official fp32.
  std::printf("\n| run | encode s | render s/view | encode speed-up | render speed-up |\n|---|---|---|---|---|\n");
  // Four significant digits: a small model's times are milliseconds, which three decimals would round to 0.001.
  std::printf("| PyTorch reference, fp32 | %.4g | %.4g | 1.00x | 1.00x |\n", ref_encode, ref_render);
  const Row* fp32 = nullptr;
  for (const Row& r : rows) {
    if (r.model != "lact" || !r.skipped.empty() || r.views != first->views || r.height != first->height) continue;
    std::printf("| lact, %s | %.4g | %.4g | %.2fx | %.2fx |\n", r.precision.c_str(), r.encode_s, 1.0 / r.render_fps,
                ref_encode / r.encode_s, ref_render * r.render_fps);
    if (r.precision == "fp32") fp32 = &r;
  }
  for (const Row& r : rows)
    if (fp32 && &r != fp32 && r.model == "lact" && r.skipped.empty() && r.views == first->views &&
        r.height == first->height)
      std::printf("lact %s against lact fp32: encode %.2fx, render %.2fx\n", r.precision.c_str(),
                  fp32->encode_s / r.encode_s, r.render_fps / fp32->render_fps);
}

}  // namespace lact::bench
