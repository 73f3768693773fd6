#include <cstdio>
#include <sstream>

#include "bench/bench_row.h"

namespace lact::bench {

namespace {

// The baseline's row for the same views and size (nullptr when it was not run).
const Row* baseline_of(const std::vector<Row>& rows, const Row& r) {
  for (const Row& b : rows)
    if (b.model == "baseline" && b.views == r.views && b.height == r.height && b.width == r.width && b.skipped.empty())
      return &b;
  return nullptr;
}

}  // namespace

void print_variant_table(const std::vector<Row>& rows) {
  std::printf(
      "\nVariants against the baseline (same run, same inputs; speed-ups measured, predicted from counted FLOPs):\n"
      "| variant | views | size | encode s | encode GFLOP | encode speed-up | predicted | render FPS | "
      "render speed-up | predicted | state MiB | state / baseline |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    if (!r.skipped.empty()) continue;
    const Row* b = baseline_of(rows, r);
    if (!b) {
      std::printf("| %s | %d | %dx%d | %.3f | %.1f | | | %.2f | | | %.2f | |\n", r.model.c_str(), r.views, r.height,
                  r.width, r.encode_s, r.encode_gflop, r.render_fps, r.state_mib);
      continue;
    }
    std::printf("| %s | %d | %dx%d | %.3f | %.1f | %.2fx | %.2fx | %.2f | %.2fx | %.2fx | %.2f | 1/%.1f |\n",
                r.model.c_str(), r.views, r.height, r.width, r.encode_s, r.encode_gflop, b->encode_s / r.encode_s,
                b->encode_gflop / r.encode_gflop, r.render_fps, r.render_fps / b->render_fps,
                b->render_gflop / r.render_gflop, r.state_mib, b->state_mib / r.state_mib);
  }
}

std::string variant_csv(const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "variant,views,height,width,tokens,encode_s,encode_gflop,encode_speedup,encode_speedup_predicted,render_fps,"
         "render_speedup,render_speedup_predicted,state_mib,state_reduction\n";
  for (const Row& r : rows) {
    if (!r.skipped.empty()) continue;
    const Row* b = baseline_of(rows, r);
    auto ratio = [&](double x) { return b ? std::to_string(x) : std::string(); };
    out << r.model << "," << r.views << "," << r.height << "," << r.width << "," << r.tokens << "," << r.encode_s << ","
        << r.encode_gflop << "," << ratio(b ? b->encode_s / r.encode_s : 0) << ","
        << ratio(b ? b->encode_gflop / r.encode_gflop : 0) << "," << r.render_fps << ","
        << ratio(b ? r.render_fps / b->render_fps : 0) << "," << ratio(b ? b->render_gflop / r.render_gflop : 0) << ","
        << r.state_mib << "," << ratio(b ? b->state_mib / r.state_mib : 0) << "\n";
  }
  return out.str();
}

}  // namespace lact::bench
