#include "bench/bench_pairs.h"

#include <algorithm>
#include <cstdio>

namespace lact::bench {

namespace {

std::string row_size_text(const Row& r) { return std::to_string(r.height) + "x" + std::to_string(r.width); }

// One view count's encode ratio in a crossover group.
struct CrossoverPoint {
  int64_t tokens = 0;
  int views = 0;
  std::optional<double> ratio;  // full/LaCT encode seconds; empty: not trusted
};

// "2048 tokens (8 views; full/LaCT 1.22x)"
std::string point_text(const CrossoverPoint& p) {
  char text[96];
  std::snprintf(text, sizeof text, "%lld tokens (%d views; full/LaCT %.2fx)", static_cast<long long>(p.tokens), p.views,
                p.ratio.value_or(0.0));
  return text;
}

// The sentence for one precision and size, its points sorted by tokens.
std::string crossover_text(const std::vector<CrossoverPoint>& points) {
  std::string unstated;
  for (const CrossoverPoint& p : points)
    if (!p.ratio) unstated += (unstated.empty() ? "" : ", ") + std::to_string(p.tokens);
  if (!unstated.empty())
    return "not stated: the encode ratio at " + unstated + " tokens spread too wide to trust (the table says why)";
  // LaCT is the faster where full attention takes longer: ratio over 1.
  auto lact_faster = [](const CrossoverPoint& p) { return *p.ratio > 1.0; };
  const auto first_faster = std::find_if(points.begin(), points.end(), lact_faster);
  if (first_faster == points.end())
    return "full attention encoded faster at every timed count, up to " + point_text(points.back()) +
           ": the crossover lies above";
  if (first_faster == points.begin() && std::all_of(points.begin(), points.end(), lact_faster))
    return "LaCT encoded faster at every timed count, from " + point_text(points.front()) +
           ": the crossover lies below";
  if (!std::all_of(first_faster, points.end(), lact_faster)) {
    std::string all;
    for (const CrossoverPoint& p : points) all += (all.empty() ? "" : ", ") + point_text(p);
    return "not stated: the ratio crosses 1 more than once (" + all + ")";
  }
  return "LaCT overtakes full attention between " + point_text(*(first_faster - 1)) + " and " +
         point_text(*first_faster);
}

}  // namespace

bool same_point(const Row& a, const Row& b) {
  return a.precision == b.precision && a.views == b.views && a.height == b.height && a.width == b.width;
}

const Row* timed_partner(const std::vector<Row>& rows, const Row& at, const std::string& model) {
  for (const Row& r : rows)
    if (r.model == model && r.skipped.empty() && same_point(r, at)) return &r;
  return nullptr;
}

PairRatios pair_ratios(const Row& full, const Row& lact) {
  PairRatios ratios;
  ratios.encode_why = untrusted_ratio(full.encode, "full encode", lact.encode, "LaCT encode");
  if (ratios.encode_why.empty()) ratios.encode = full.encode_s / lact.encode_s;
  ratios.render_why = untrusted_ratio(lact.render, "LaCT render", full.render, "full render");
  if (ratios.render_why.empty()) ratios.render = lact.render_fps / full.render_fps;
  return ratios;
}

std::vector<std::string> encode_crossover_lines(const std::vector<Row>& rows) {
  std::vector<const Row*> groups;  // the first LaCT row of each precision and size, in the order they ran
  for (const Row& r : rows)
    if (r.model == "lact" && std::none_of(groups.begin(), groups.end(), [&](const Row* g) {
          return g->precision == r.precision && g->height == r.height && g->width == r.width;
        }))
      groups.push_back(&r);
  std::vector<std::string> lines;
  for (const Row* group : groups) {
    std::vector<CrossoverPoint> points;
    for (const Row& lact : rows) {
      if (lact.model != "lact" || !lact.skipped.empty() || lact.precision != group->precision ||
          lact.height != group->height || lact.width != group->width)
        continue;
      const Row* full = timed_partner(rows, lact, "full");
      if (full) points.push_back({lact.tokens, lact.views, pair_ratios(*full, lact).encode});
    }
    if (points.empty()) continue;
    std::stable_sort(points.begin(), points.end(),
                     [](const CrossoverPoint& a, const CrossoverPoint& b) { return a.tokens < b.tokens; });
    lines.push_back("Encode crossover, " + group->precision + " " + row_size_text(*group) + ": " +
                    crossover_text(points));
  }
  return lines;
}

}  // namespace lact::bench
