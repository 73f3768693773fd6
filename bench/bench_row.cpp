#include "bench/bench_row.h"

#include <algorithm>
#include <utility>

namespace lact::bench {

double Samples::median() const {
  if (values.empty()) return 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}
double Samples::min() const { return values.empty() ? 0 : *std::min_element(values.begin(), values.end()); }
double Samples::max() const { return values.empty() ? 0 : *std::max_element(values.begin(), values.end()); }

namespace {

std::string percent(double fraction) { return std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "%"; }

}  // namespace

std::string untrusted_ratio(const Samples& a, const std::string& what_a, const Samples& b, const std::string& what_b) {
  if (a.values.empty() || b.values.empty()) return what_a + " or " + what_b + " was not timed";
  if (a.spread() + b.spread() <= kTrustedSpread) return "";
  return what_a + " spread " + percent(a.spread()) + ", " + what_b + " spread " + percent(b.spread()) +
         ": together over " + percent(kTrustedSpread);
}

std::string untrusted_rows(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    if (!r.skipped.empty()) continue;
    for (const auto& [samples, what] : {std::pair{&r.encode, "encode"}, {&r.render, "render"}})
      if (samples->spread() > kTrustedSpread)
        return r.model + " " + r.precision + " " + std::to_string(r.views) + " views " + std::to_string(r.height) +
               "x" + std::to_string(r.width) + ": " + what + " spread " + percent(samples->spread()) + ", over " +
               percent(kTrustedSpread);
  }
  return "";
}

}  // namespace lact::bench
