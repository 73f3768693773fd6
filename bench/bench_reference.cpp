#include "bench/bench_reference.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "pipeline/subprocess.h"

#ifndef LACT_SOURCE_DIR
#define LACT_SOURCE_DIR "."
#endif

namespace lact::bench {

void run_reference(const BenchOptions& o, const std::vector<Row>& rows) {
  const Row* first = nullptr;
  for (const Row& r : rows)
    if (r.model == "lact" && r.skipped.empty() && !first) first = &r;
  if (!first) throw Error("--reference", "needs a LaCT row that ran");
  const std::vector<std::string> argv = {
      o.python,      std::string(LACT_SOURCE_DIR) + "/tools/reference/bench_reference.py",
      "--views-in",  std::to_string(first->views),
      "--views-out", std::to_string(o.targets),
      "--size",      std::to_string(first->height),
      "--threads",   std::to_string(o.common.threads)};
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
  std::printf("  reference fp32: encode %.3f s, render %.3f s/view\n", ref_encode, ref_render);
  for (const Row& r : rows)
    if (r.model == "lact" && r.skipped.empty() && r.views == first->views && r.height == first->height)
      std::printf("  lact %-9s encode %.3f s, render %.3f s/view -> %.2fx faster encode, %.2fx faster render\n",
                  (r.precision + ":").c_str(), r.encode_s, 1.0 / r.render_fps, ref_encode / r.encode_s,
                  ref_render * r.render_fps);
}

}  // namespace lact::bench
