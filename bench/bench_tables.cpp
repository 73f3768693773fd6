#include "bench/bench_tables.h"

#include <cstdio>
#include <utility>

#include "bench/bench_pairs.h"

namespace lact::bench {

namespace {

// Full attention's row `full` against LaCT's `lact` (the same precision, views and size): the two ratio cells, or
// "not stated" where the timings' spreads are too wide (the reason added to `unstated`).
std::string ratio_cells(const Row& full, const Row& lact, std::vector<std::string>& unstated) {
  const std::string where = std::to_string(lact.views) + " views " + std::to_string(lact.height) + "x" +
                            std::to_string(lact.width) + " " + lact.precision + ": ";
  const PairRatios ratios = pair_ratios(full, lact);
  std::string cells;
  for (const auto& [ratio, why] : {std::pair{ratios.encode, ratios.encode_why}, {ratios.render, ratios.render_why}}) {
    char text[32];
    std::snprintf(text, sizeof text, " %.2fx |", ratio.value_or(0.0));
    cells += ratio ? text : " not stated |";
    if (!ratio) unstated.push_back(where + why);
  }
  return cells;
}

// Three significant digits, whole numbers from 100 up: three decimals showed a 0.46 ms encode as 0.000 s and
// full attention's 0.047 MiB KV cache at 32 tokens as 0.0 MiB.
std::string significant(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value >= 100 ? "%.0f" : "%.3g", value);
  return text;
}

}  // namespace

void print_table(const std::vector<Row>& rows) {
  std::vector<std::string> unstated;  // why a ratio was left out
  std::printf(
      "\n| model | precision | views | size | tokens | open s | encode s | encode min s | encode spread | "
      "render FPS | render spread | first frame s | state MiB | encode GFLOP/s | render GFLOP/s | encode / GEMM | "
      "render / GEMM | "
      "full/LaCT encode | LaCT/full FPS "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    if (!r.skipped.empty()) {
      std::printf("| %s | %s | %d | %dx%d | %lld | skipped: %s | | | | | | | | | | | | | |\n", r.model.c_str(),
                  r.precision.c_str(), r.views, r.height, r.width, static_cast<long long>(r.tokens), r.skipped.c_str());
      continue;
    }
    std::string ratios = " | |";
    const Row* lact = r.model == "full" ? timed_partner(rows, r, "lact") : nullptr;
    if (lact) ratios = ratio_cells(r, *lact, unstated);
    const std::string open = r.open_s < 0 ? "-" : std::to_string(r.open_s).substr(0, 5);
    // The fraction of the backend's own n^3 product rate at this precision (the ceiling the issue measures by).
    const double gemm = r.gemm_gflops > 0 ? r.gemm_gflops : 1e300;
    std::printf(
        "| %s | %s | %d | %dx%d | %lld | %s | %s | %s | %.0f%% | %.2f | %.0f%% | %s | %s | %.1f | %.1f | "
        "%.0f%% | "
        "%.0f%% "
        "|%s\n",
        r.model.c_str(), r.precision.c_str(), r.views, r.height, r.width, static_cast<long long>(r.tokens),
        open.c_str(), significant(r.encode_s).c_str(), significant(r.encode.min()).c_str(), 100 * r.encode.spread(),
        r.render_fps, 100 * r.render.spread(), significant(r.first_frame.median()).c_str(),
        significant(r.state_mib).c_str(), r.encode_gflops, r.render_gflops, 100 * r.encode_gflops / gemm,
        100 * r.render_gflops / gemm, ratios.c_str());
  }
  for (const std::string& why : unstated)
    std::printf("Ratio not stated (too wide a spread to trust): %s\n", why.c_str());
  for (const std::string& line : encode_crossover_lines(rows)) std::printf("%s\n", line.c_str());
}

namespace {

void print_profile(const char* what, const Row& r, const std::vector<OpProfile>& profile) {
  double total = 0;
  for (const OpProfile& p : profile) total += p.milliseconds;
  std::printf("\n%s %s, %d views %dx%d: device time by op (%.1f ms in all)\n", r.model.c_str(), what, r.views, r.height,
              r.width, total);
  std::printf("| op | calls | ms | share | GFLOP/s |\n|---|---|---|---|---|\n");
  for (const OpProfile& p : profile) {
    char rate[32] = "";
    if (p.gflop > 0 && p.milliseconds > 0) std::snprintf(rate, sizeof rate, "%.1f", p.gflop / (p.milliseconds / 1e3));
    std::printf("| %s | %lld | %.2f | %.1f%% | %s |\n", p.op.c_str(), static_cast<long long>(p.calls), p.milliseconds,
                total > 0 ? 100.0 * p.milliseconds / total : 0.0, rate);
  }
}

}  // namespace

void print_profiles(const std::vector<Row>& rows, const std::string& backend) {
  bool any = false;
  for (const Row& r : rows) {
    if (r.encode_profile.empty()) continue;
    any = true;
    print_profile("encode", r, r.encode_profile);
    print_profile("render", r, r.render_profile);
  }
  if (!any) std::printf("\n--profile: the %s backend does not time ops\n", backend.c_str());
}

void print_precision_ratios(const std::vector<Row>& rows) {
  bool header = false;
  for (const Row& r : rows) {
    if (r.precision == "fp32" || !r.skipped.empty()) continue;
    for (const Row& base : rows)
      if (base.precision == "fp32" && base.skipped.empty() && base.model == r.model && base.views == r.views &&
          base.height == r.height && base.width == r.width) {
        if (!header) std::printf("\nAgainst fp32 in this run (median over median):\n");
        header = true;
        const std::string encode = untrusted_ratio(r.encode, r.precision + " encode", base.encode, "fp32 encode");
        const std::string render = untrusted_ratio(r.render, r.precision + " render", base.render, "fp32 render");
        const std::string why = encode + (encode.empty() || render.empty() ? "" : "; ") + render;
        if (!why.empty()) {
          std::printf("  %s %d views %dx%d at %s: not stated (too wide a spread to trust): %s\n", r.model.c_str(),
                      r.views, r.height, r.width, r.precision.c_str(), why.c_str());
          continue;
        }
        std::printf("  %s %d views %dx%d at %s: encode %.2fx, render %.2fx the speed at fp32\n", r.model.c_str(),
                    r.views, r.height, r.width, r.precision.c_str(), base.encode_s / r.encode_s,
                    r.render_fps / base.render_fps);
      }
  }
}

}  // namespace lact::bench
