#include "datasets/view_selection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "system/error.h"

namespace lact {

namespace {

int parse_int(const std::string& text, const std::string& spec, const std::string& flag) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    throw Error(flag,
                "'" + spec + "' is not a view selection (0,1,2 | 0-7 | uniform:N | random:N | fold8[:N] | all | rest)");
  return value;
}

std::array<double, 6> camera_feature(const Camera& c) {
  // [centre, forward (the OpenCV z axis)], as Long-LRM clusters them.
  return {c.c2w[3], c.c2w[7], c.c2w[11], c.c2w[2], c.c2w[6], c.c2w[10]};
}

double squared_distance(const std::array<double, 6>& a, const std::array<double, 6>& b) {
  double d = 0;
  for (int i = 0; i < 6; ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return d;
}

}  // namespace

std::vector<int> fold8_targets(int view_count) {
  std::vector<int> targets;
  for (int i = 0; i < view_count; i += 8) targets.push_back(i);
  return targets;
}

std::vector<int> kmeans_views(const Scene& scene, const std::vector<int>& candidates, int count, uint64_t seed) {
  const int n = static_cast<int>(candidates.size());
  if (count >= n) return candidates;
  std::vector<std::array<double, 6>> points;
  for (int i : candidates) points.push_back(camera_feature(scene.views[i].camera));

  std::mt19937_64 rng(seed);
  double best_inertia = std::numeric_limits<double>::infinity();
  std::vector<std::array<double, 6>> best_centres;
  for (int restart = 0; restart < 8; ++restart) {
    // k-means++ initialisation.
    std::vector<std::array<double, 6>> centres{points[std::uniform_int_distribution<int>(0, n - 1)(rng)]};
    std::vector<double> nearest(n, std::numeric_limits<double>::infinity());
    while (static_cast<int>(centres.size()) < count) {
      double total = 0;
      for (int i = 0; i < n; ++i)
        total += nearest[i] = std::min(nearest[i], squared_distance(points[i], centres.back()));
      double pick = std::uniform_real_distribution<double>(0, total)(rng);
      int chosen = n - 1;
      for (int i = 0; i < n; ++i)
        if ((pick -= nearest[i]) <= 0) {
          chosen = i;
          break;
        }
      centres.push_back(points[chosen]);
    }
    // Lloyd iterations.
    std::vector<int> label(n, -1);
    double inertia = 0;
    for (int iteration = 0; iteration < 300; ++iteration) {
      bool changed = false;
      inertia = 0;
      for (int i = 0; i < n; ++i) {
        int arg = 0;
        double best = std::numeric_limits<double>::infinity();
        for (int c = 0; c < count; ++c) {
          const double d = squared_distance(points[i], centres[c]);
          if (d < best) best = d, arg = c;
        }
        inertia += best;
        if (label[i] != arg) label[i] = arg, changed = true;
      }
      if (!changed) break;
      std::vector<std::array<double, 6>> sums(count, std::array<double, 6>{});
      std::vector<int> sizes(count, 0);
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < 6; ++k) sums[label[i]][k] += points[i][k];
        ++sizes[label[i]];
      }
      for (int c = 0; c < count; ++c)
        if (sizes[c])
          for (int k = 0; k < 6; ++k) centres[c][k] = sums[c][k] / sizes[c];
    }
    if (inertia < best_inertia) best_inertia = inertia, best_centres = centres;
  }
  // The candidate nearest each centre, each used once.
  std::set<int> chosen;
  for (const auto& centre : best_centres) {
    int arg = -1;
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < n; ++i) {
      const double d = squared_distance(points[i], centre);
      if (d < best && !chosen.count(candidates[i])) best = d, arg = candidates[i];
    }
    if (arg >= 0) chosen.insert(arg);
  }
  return {chosen.begin(), chosen.end()};
}

std::vector<int> select_views(const std::string& spec, const Scene& scene, bool is_targets,
                              const std::vector<int>& other, uint64_t seed, const std::string& flag) {
  const int count = static_cast<int>(scene.views.size());
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const bool has_n = colon != std::string::npos;
  const int n = has_n ? parse_int(spec.substr(colon + 1), spec, flag) : 0;
  if (has_n && n <= 0) throw Error(flag, "'" + spec + "': the count must be positive");
  if (has_n && n > count)
    throw Error(scene.source,
                flag + " " + spec + " asks for " + std::to_string(n) + " views of " + std::to_string(count));
  std::vector<int> out;
  if (kind == "all" && !has_n) {
    for (int i = 0; i < count; ++i) out.push_back(i);
  } else if (kind == "rest" && !has_n) {
    const std::set<int> taken(other.begin(), other.end());
    for (int i = 0; i < count; ++i)
      if (!taken.count(i)) out.push_back(i);
  } else if (kind == "uniform" && has_n) {
    for (int i = 0; i < n; ++i)
      out.push_back(static_cast<int>(std::lround(static_cast<double>(i) * count / n)) % count);
  } else if (kind == "random" && has_n) {
    std::vector<int> all(count);
    for (int i = 0; i < count; ++i) all[i] = i;
    std::mt19937_64 rng(seed);
    std::shuffle(all.begin(), all.end(), rng);
    out.assign(all.begin(), all.begin() + n);
    std::sort(out.begin(), out.end());
  } else if (kind == "fold8") {
    const std::vector<int> targets = fold8_targets(count);
    if (is_targets) {
      if (has_n) throw Error(flag, "'" + spec + "': fold8 targets take no count (every 8th view)");
      out = targets;
    } else if (!has_n && !scene.kmeans_inputs.empty()) {
      out = scene.kmeans_inputs;
    } else {
      const std::set<int> excluded(targets.begin(), targets.end());
      std::vector<int> candidates;
      for (int i = 0; i < count; ++i)
        if (!excluded.count(i)) candidates.push_back(i);
      out = kmeans_views(scene, candidates, has_n ? n : 32, seed);
    }
  } else if (!has_n) {
    std::stringstream stream(spec);
    std::string item;
    std::set<int> given;  // a view given twice would be encoded (or scored) twice and change the result
    while (std::getline(stream, item, ',')) {
      const size_t dash = item.find('-', 1);
      const int first = parse_int(item.substr(0, dash), spec, flag);
      const int last = dash == std::string::npos ? first : parse_int(item.substr(dash + 1), spec, flag);
      if (last < first) throw Error(flag, "'" + item + "' is an empty range");
      for (int i = first; i <= last; ++i) {
        if (i < 0 || i >= count)
          throw Error(scene.source, "view index " + std::to_string(i) + " (" + flag +
                                        ") is out of range: the scene has " + std::to_string(count) + " views");
        if (!given.insert(i).second)
          throw Error(flag, "'" + spec + "' gives view " + std::to_string(i) + " twice (each view once)");
        out.push_back(i);
      }
    }
  } else {
    parse_int("", spec, flag);  // throws the usage message
  }
  if (out.empty()) throw Error(flag, "'" + spec + "' selects no views");
  return out;
}

}  // namespace lact
