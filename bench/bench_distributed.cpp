// lact bench --distributed mpi|nccl (under mpirun): encode across the ranks against one rank alone, in the
// same run, with the bytes each layer exchanges and the difference between the two states; and
// lact bench --scaling: the model of scaling the paper's 1M-token scene (128 views at 536x960) over many GPUs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "bench/bench_inputs.h"
#include "bench/bench_row.h"
#include "bench/bench_run.h"
#include "core/flop_model.h"
#include "core/memory_estimate.h"
#include "core/module_kind.h"
#include "core/random_weights.h"
#include "pipeline/distribution.h"
#include "system/error.h"

namespace lact::bench {

namespace {

struct DistributedRow {
  std::string model;
  int views = 0, height = 0, width = 0;
  int64_t tokens = 0;
  double alone_s = 0, ranks_s = 0;  // one rank encoding every view; every rank its share (the slowest rank)
  double mib_per_layer = 0;         // payload this rank exchanged per layer (all-reduce or all-gather)
  double state_difference = 0;      // max |state across ranks - state of one rank|
};

double max_difference(Backend& be, const SceneState& a, const SceneState& b) {
  double worst = 0;
  for (size_t m = 0; m < a.modules.size(); ++m)
    for (size_t t = 0; t < a.modules[m].tensors.size(); ++t) {
      const std::vector<float> x = be.to_host(a.modules[m].tensors[t].second);
      const std::vector<float> y = be.to_host(b.modules[m].tensors[t].second);
      for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(double(x[i]) - double(y[i])));
    }
  return worst;
}

void barrier(const Distribution& d) { d.ranks->all_gather_text(""); }

// The slowest rank's seconds.
double slowest(const Distribution& d, double seconds) {
  double worst = 0;
  for (const std::string& text : d.ranks->all_gather_text(std::to_string(seconds)))
    worst = std::max(worst, std::stod(text));
  return worst;
}

DistributedRow measure(const std::string& name, const Model& model, int views, std::pair<int, int> size,
                       const BenchOptions& o, const Distribution& d) {
  const auto [height, width] = size;
  DistributedRow row{name, views, height, width};
  const std::vector<PosedImage> inputs = bench_views(views, height, width, true, 0);
  row.tokens = static_cast<int64_t>(views) * (height / model.config().patch_size) * (width / model.config().patch_size);
  const auto [begin, end] = share_of(d, inputs.size());
  const std::vector<PosedImage> mine(inputs.begin() + begin, inputs.begin() + end);
  Backend& be = model.backend();
  SceneState alone, shared;
  Samples alone_s, ranks_s;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    if (d.leads()) {  // rank 0 alone; the others wait at the barrier
      const double t = now_seconds();
      alone = model.encode(inputs);
      be.synchronize();
      if (r >= 0) alone_s.values.push_back(now_seconds() - t);
    }
    barrier(d);
    const int64_t bytes = d.collective->bytes_communicated();
    const double t = now_seconds();
    shared = model.encode(mine, {}, d.collective);
    be.synchronize();
    const double seconds = slowest(d, now_seconds() - t);
    if (r >= 0) ranks_s.values.push_back(seconds);
    row.mib_per_layer = double(d.collective->bytes_communicated() - bytes) / model.config().layers / (1 << 20);
  }
  row.alone_s = alone_s.median();
  row.ranks_s = ranks_s.median();
  if (d.leads()) row.state_difference = max_difference(be, alone, shared);
  return row;
}

void print_rows(const std::vector<DistributedRow>& rows, const Distribution& d) {
  std::printf(
      "\n| model | ranks | views | size | tokens | tokens per rank | encode s, 1 rank | encode s, %d ranks | "
      "speed-up | MiB exchanged per layer per rank | max state diff |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
      d.size());
  for (const DistributedRow& r : rows)
    std::printf("| %s | %d | %d | %dx%d | %lld | %lld | %.3f | %.3f | %.2fx | %.3f | %.2g |\n", r.model.c_str(),
                d.size(), r.views, r.height, r.width, static_cast<long long>(r.tokens),
                static_cast<long long>(r.tokens / d.size()), r.alone_s, r.ranks_s, r.alone_s / r.ranks_s,
                r.mib_per_layer, r.state_difference);
  std::printf(
      "\nColumns: encode s = median of --repeat after --warmup, across ranks the slowest rank's; MiB exchanged = "
      "payload this rank handed to the collective per layer (LaCT: the summed update directions, all-reduced; "
      "full attention: its keys and values, gathered); max state diff = the state across ranks against rank 0 "
      "encoding every view alone (summation order).\n");
}

void run_across_ranks(const BenchOptions& o) {
  RunBackend run = start_run_backend(o.common);
  const Distribution& d = run.distribution;
  const std::vector<int> views = parse_list(o.views, "--views", 100000);
  const std::vector<std::pair<int, int>> sizes = parse_size_list(o.sizes, "--size", 8192);
  const ModelConfig lact = lact_config(o);
  check_patch_divides(sizes, lact.patch_size);
  std::vector<DistributedRow> rows;
  for (const auto& [name, config] : bench_models(o, lact)) {
    const Model model(random_model_weights(config, *run.backend, 1), *run.backend);  // the same seed on every rank
    for (const std::pair<int, int>& size : sizes)
      for (int v : views) {
        on_every_rank(d, [&] {
          if (v < d.size())
            throw Error("--views", std::to_string(v) + " views for " + std::to_string(d.size()) + " ranks");
          check_memory(model, v, size.first, size.second, "--size");  // rank 0 encodes every view alone
        });
        rows.push_back(measure(name, model, v, size, o, d));
        if (d.leads()) std::fprintf(stderr, "  %s %d views %dx%d done\n", name.c_str(), v, size.first, size.second);
      }
  }
  if (!d.leads()) return;
  std::printf("lact bench --distributed %s: %d ranks, %s, config %s (%d layers, dim %d), random weights\n",
              o.common.distributed.c_str(), d.size(), run.backend->device_description().c_str(), o.config.c_str(),
              lact.layers, lact.dim);
  print_rows(rows, d);
}

// The scaling model: per rank, its share of the FLOPs at --tflops against the layer's exchange over a link of
// each --bandwidth (ring all-reduce: 2(P-1)/P of the payload per rank; all-gather: (P-1)/P), and its memory.
void print_scaling_model(const BenchOptions& o) {
  constexpr int kViews = 128, kHeight = 536, kWidth = 960;  // the paper's largest scene, about 1M tokens
  const ModelConfig lact = lact_config(o);
  const int64_t per_view = int64_t(kHeight / lact.patch_size) * (kWidth / lact.patch_size), tokens = kViews * per_view;
  std::vector<double> links;
  for (int gbs : parse_list(o.bandwidths, "--bandwidth", 100000)) links.push_back(gbs);
  const std::vector<int> rank_counts = parse_list(o.ranks, "--ranks", kViews);  // before the table's header
  const auto models = bench_models(o, lact);
  std::printf(
      "Scaling model: %d views at %dx%d = %lld tokens, config %s (%d layers, dim %d); %.0f TFLOP/s per device "
      "sustained; fp32 exchanges; links %s GB/s\n\n| model | ranks | tokens per rank | compute s per rank | "
      "MiB per layer |",
      kViews, kHeight, kWidth, static_cast<long long>(tokens), o.config.c_str(), lact.layers, lact.dim, o.tflops,
      o.bandwidths.c_str());
  for (double gbs : links) std::printf(" exchange s at %.0f GB/s | overhead |", gbs);
  std::printf(" memory per rank GiB |\n|---|---|---|---|---|");
  for (size_t i = 0; i < links.size(); ++i) std::printf("---|---|");
  std::printf("---|\n");
  for (const auto& [name, config] : models) {
    bool gathers = false;  // a KV cache is gathered; fast-weight updates are summed
    for (const ModuleConfig& m : config.block) gathers |= m.kind->rank_exchange() == RankExchange::Gather;
    const double compute_total = encode_flops(config, tokens, per_view) / (o.tflops * 1e12);
    const double payload = double(config.state_floats_per_layer(tokens)) * 4;  // bytes per layer
    for (int ranks : rank_counts) {
      const double compute = compute_total / ranks;  // every part of the encode splits over tokens (NS is tiny)
      const double factor = ranks == 1 ? 0.0 : gathers ? double(ranks - 1) / ranks : 2.0 * (ranks - 1) / ranks;
      const int64_t views = (kViews + ranks - 1) / ranks;
      const double memory =
          double(estimate_encode_memory(config, ModelOptions{}, views, kHeight, kWidth, kViews).total());
      std::printf("| %s | %d | %lld | %.3f | %.2f |", name.c_str(), ranks, static_cast<long long>(tokens / ranks),
                  compute, payload / (1 << 20));
      for (double gbs : links) {
        const double exchange = config.layers * factor * payload / (gbs * 1e9);
        std::printf(" %.4f | %.1f%% |", exchange, 100.0 * exchange / compute);
      }
      std::printf(" %.1f |\n", memory / (1ll << 30));
    }
  }
  std::printf(
      "\nCompute = counted encode FLOPs / ranks / (--tflops); exchange = layers x the payload a rank sends "
      "(LaCT: ring all-reduce of the update directions, fixed size; full attention: all-gather of the KV "
      "cache, growing with tokens) / link bandwidth, latency ignored; memory = lact's encode estimate for the "
      "rank's views, with every rank's KV cache for full attention.\n");
}

}  // namespace

void run_distributed_bench(const BenchOptions& o) {
  if (o.scaling) return print_scaling_model(o);
  run_across_ranks(o);
}

}  // namespace lact::bench
