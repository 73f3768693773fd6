// The timing grid of `lact bench`: every precision's pass (its backend, the models, views x sizes), then the
// tables, the files and the reference.
#include "bench/bench_run.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "bench/bench_files.h"
#include "bench/bench_inputs.h"
#include "bench/bench_reference.h"
#include "bench/bench_row.h"
#include "bench/bench_tables.h"
#include "core/flop_model.h"
#include "core/memory_estimate.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "kernels/cpu/dnnl_gemm.h"
#include "kernels/cuda/attention_library.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/output_files.h"
#include "system/subprocess.h"
#include "system/thread_limit.h"

namespace lact::bench {

namespace {

// The backend's own matrix-product rate at its precision (the ceiling the model's GFLOP/s are read
// against): n^3 on random data (not constants: some units run faster on zeros), best of 10 after a warm-up (best of
// 3 read 360-474 GFLOP/s fp32 across runs on this shared machine, and a low ceiling flattered the fractions).
double gemm_gflops(Backend& be, int64_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> host(static_cast<size_t>(n * n));
  for (float& v : host) v = u(rng);
  Tensor a = be.from_host({n, n}, host.data());
  for (float& v : host) v = u(rng);
  Tensor b = be.from_host({n, n}, host.data()), c = be.empty({n, n});
  double best = 1e30;
  for (int i = 0; i < 11; ++i) {
    const double t = now_seconds();
    matmul(be, a, false, b, true, c);
    be.synchronize();
    if (i) best = std::min(best, now_seconds() - t);
  }
  return 2.0 * n * n * n / best / 1e9;
}

// "load average 4.62 on 2 CPUs, 3 other threads running now"
std::string load_text(const MachineLoad& load) {
  char text[128];
  std::snprintf(text, sizeof text, "load average %.2f on %d CPUs, %d other thread%s running now", load.average,
                load.cpus, load.others_running, load.others_running == 1 ? "" : "s");
  return text;
}

// The threads a run without --threads got (system/thread_limit.h: fewer on a busy machine), as the CPU
// backend describes itself ("CPU, 2 threads, ..."); the usable CPUs for a backend that does not say.
int default_threads_used(const Backend& be) {
  const std::string description = be.device_description();
  const size_t comma = description.find(", ");
  const int threads = comma == std::string::npos ? 0 : std::atoi(description.c_str() + comma + 2);
  return threads > 0 ? threads : usable_cpus();
}

// One model at one view count and size: skipped when its encode is predicted too slow (from the rate measured at
// smaller sizes) or too large for memory, else timed.
Row run_one(const std::string& name, const Model& model, int views, int height, int width, const BenchOptions& o,
            double measured_gflops, double memory_limit) {
  Row row;
  row.model = name, row.views = views, row.height = height, row.width = width;
  const int patch = model.config().patch_size;
  const int64_t per_view = static_cast<int64_t>(height / patch) * (width / patch);
  row.tokens = views * per_view;
  const double flops = encode_flops(model.config(), row.tokens, per_view);
  if (measured_gflops > 0 && flops / (measured_gflops * 1e9) > o.max_seconds) {
    row.skipped =
        "predicted encode " + std::to_string(static_cast<int>(flops / (measured_gflops * 1e9))) + " s > --max-seconds";
    return row;
  }
  const double need =
      static_cast<double>(estimate_encode_memory(model.config(), model.options(), views, height, width).total());
  if (need > memory_limit) {
    char text[96];
    std::snprintf(text, sizeof text, "needs about %.3g GiB > memory limit", need / (1 << 30));
    row.skipped = text;
    return row;
  }
  const auto inputs = bench_views(views, height, width, true, 0);
  std::vector<Camera> cameras;
  for (const PosedImage& v : bench_views(o.targets, height, width, false, 1)) cameras.push_back(v.camera);
  SceneState state;
  auto seconds = [&](const std::function<void()>& work) {
    const double t = now_seconds();
    work();
    model.backend().synchronize();
    return now_seconds() - t;
  };
  for (int r = -o.warmup; r < o.repeat; ++r) {
    state = SceneState();  // the last scene's state gone first, as when a scene is encoded again, not kept beside it
    const double e = seconds([&] { state = model.encode(inputs); });
    // A scene's first frame also does what a backend does once per state (the CPU's bf16 copy of it); the FPS is
    // the frames after, as a viewer orbiting the scene sees them.
    const double first = seconds([&] { model.render(state, cameras); });
    const double rs = seconds([&] { model.render(state, cameras); }) / o.targets;
    if (r >= 0)
      row.encode.values.push_back(e), row.render.values.push_back(rs), row.first_frame.values.push_back(first);
  }
  row.encode_s = row.encode.median();
  row.render_fps = 1.0 / row.render.median();
  row.encode_gflop = flops / 1e9;
  row.render_gflop = render_flops(model.config(), per_view, row.tokens) / 1e9;
  row.encode_gflops = row.encode_gflop / row.encode_s;
  row.render_gflops = row.render_gflop * row.render_fps;
  row.state_mib = static_cast<double>(state.floats()) * 4.0 / (1 << 20);
  if (o.profile && model.backend().start_profiling()) {  // one more run, with events around every op
    model.encode(inputs);
    row.encode_profile = model.backend().stop_profiling();
    model.backend().start_profiling();
    model.render(state, cameras);
    row.render_profile = model.backend().stop_profiling();
  }
  return row;
}

// One precision's pass: its backend, the model opened (timed), every model x views x size.
std::vector<Row> run_precision_pass(const BenchOptions& o, const std::string& precision, ModelConfig* lact_out) {
  CommonOptions common = o.common;
  common.precision = precision;
  auto backend = make_backend(common);
  const std::vector<int> views = parse_list(o.views, "--views", 100000);
  const std::vector<std::pair<int, int>> sizes = parse_size_list(o.sizes, "--size", kMaxImageSide);
  // --model: opened once, timed (the open s column).
  double open_s = -1;
  std::optional<ModelWeights> file_weights;
  if (!o.model.empty()) {
    const double t = now_seconds();
    file_weights = load_model(o.model, *backend);
    open_s = now_seconds() - t;
  }
  const ModelConfig lact = file_weights ? file_weights->config : lact_config(o);
  *lact_out = lact;
  check_patch_divides(sizes, lact.patch_size);
  std::vector<std::pair<std::string, std::unique_ptr<Model>>> built;
  for (const auto& [name, config] : bench_models(o, lact)) {
    const bool from_file = name == "lact" && file_weights;
    ModelWeights weights = from_file ? std::move(*file_weights) : random_model_weights(config, *backend, 1);
    if (from_file) file_weights.reset();
    built.push_back({name, std::make_unique<Model>(std::move(weights), *backend)});
  }
  struct sysinfo info;
  const double physical = sysinfo(&info) == 0 ? static_cast<double>(info.totalram) * info.mem_unit : 16e9;
  const double available = static_cast<double>(backend->available_memory());
  const double memory_limit = o.common.memory_limit_gb > 0
                                  ? static_cast<double>(memory_limit_bytes(o.common.memory_limit_gb))
                                  : (available > 0 ? 0.9 * available : 0.7 * physical);
  const int64_t gemm_n = backend->name() == "cuda" ? 8192 : 1024;
  const double gemm = gemm_gflops(*backend, gemm_n);
  std::printf("lact bench: %s (%s), %d thread(s), %s gemm %lld^3 %.1f GFLOP/s; config %s, %d layers, dim %d; %s\n",
              backend->name().c_str(), backend->device_description().c_str(),
              o.common.threads > 0 ? o.common.threads : default_threads_used(*backend), precision.c_str(),
              static_cast<long long>(gemm_n), gemm, o.model.empty() ? o.config.c_str() : o.model.c_str(), lact.layers,
              lact.dim, load_text(machine_load()).c_str());
  std::fflush(stdout);
  std::vector<Row> rows;
  std::vector<double> measured(built.size(), 0.0);  // sustained GFLOP/s so far, to predict larger sizes
  for (const auto& [height, width] : sizes)
    for (int v : views)
      for (size_t m = 0; m < built.size(); ++m) {
        Row row = run_one(built[m].first, *built[m].second, v, height, width, o, measured[m], memory_limit);
        row.precision = precision_name(backend->precision());
        row.gemm_gflops = gemm;
        row.device = backend->device_description();
        row.threads = o.common.threads > 0 ? o.common.threads : default_threads_used(*backend);
        row.attention = cuda::attention_path(*backend);  // what ran so far (a fallback shows here)
        row.activations = dtype_name(backend->activation_type());
        if (built[m].first == "lact") row.open_s = open_s;
        if (row.skipped.empty()) measured[m] = std::max(measured[m], row.encode_gflops);
        std::fprintf(stderr, "  %s %s %d views %dx%d: %s; attention %s; %s activations\n", row.model.c_str(),
                     row.precision.c_str(), v, height, width,
                     row.skipped.empty() ? (std::to_string(row.encode_s) + " s encode").c_str() : row.skipped.c_str(),
                     row.attention.c_str(), row.activations.c_str());
        rows.push_back(row);
      }
  // The ceiling once more after the rows, the higher of the two kept: a burst of other work on a shared machine
  // during one measurement read fp32 at 217 GFLOP/s (the rows then at 158% of it) where the runs around it read
  // 360-420.
  const double after = gemm_gflops(*backend, gemm_n);
  std::printf("  %s gemm %lld^3 again after the rows: %.1f GFLOP/s (the ceiling: the higher)\n", precision.c_str(),
              static_cast<long long>(gemm_n), after);
  for (Row& row : rows) row.gemm_gflops = std::max(gemm, after);
  if (o.profile) print_profiles(rows, backend->name());
  return rows;
}

// A precision other than fp32 is timed beside fp32 in the same run (the ratio users choose by), fp32 first.
// --reference times fp32 and bf16 both (the official code's fp32 against lact at each), bf16 where it runs: bf16
// was not asked for, so a CPU without it times fp32 alone without a word. Asked for (--precision bf16) where the CPU
// has none, the run stops here, before the fp32 baseline spends its minutes.
std::vector<std::string> bench_precisions(const BenchOptions& o) {
  std::vector<std::string> precisions = {o.common.precision};
  if (o.common.precision != "fp32" && !o.no_fp32_baseline) precisions.insert(precisions.begin(), "fp32");
  const bool cpu = o.common.backend == "cpu";
  std::string why;
  if (cpu && o.common.precision == "bf16" && !cpu_bf16_available(&why)) throw Error("--device cpu", why);
  if (o.reference && o.common.precision == "fp32" && (!cpu || cpu_bf16_available())) precisions.push_back("bf16");
  return precisions;
}

void print_columns() {
  std::printf(
      "\nColumns: tokens = input views x (H/p) x (W/p) for views of HxW and the config's patch size p; open s = "
      "reading --model (- for random weights); "
      "encode s = median of --repeat after --warmup, its minimum, spread = (max - min) / median; render FPS = "
      "target views rendered per second (median), in the frames after a scene's first; first frame s = rendering the "
      "--targets views the first time after an encode (median; it also converts the state where the backend does: "
      "the CPU's bf16); state MiB = fast weights (LaCT, fixed) or KV cache (full attention, "
      "grows with tokens); GFLOP/s from counted FLOPs; encode / GEMM and render / GEMM = those rates as a fraction of "
      "the gemm rate at the row's precision (the ceiling: the higher of its two readings, before and after the rows); "
      "ratios measured in this run, stated only where the two timings' spreads together stay within 25%%; the "
      "encode crossover line reads them, per precision and size, over the view counts timed.\n");
}

}  // namespace

// --json, --csv and --plot, before any work. The other modes print tables only: a file asked of them is refused
// (it was silently never written). Two flags naming one file are refused too: the second write found the first's
// file after the whole run ("appeared while this run worked"), or with --force replaced it.
void check_output_files(const BenchOptions& o) {
  const char* mode = o.gemm_libraries                 ? "--gemm-libraries"
                     : o.lpips                        ? "--lpips"
                     : o.scaling                      ? "--scaling"
                     : o.common.distributed != "none" ? "--distributed"
                                                      : nullptr;
  InputFiles inputs;
  inputs.add(o.model);
  std::map<std::string, const char*> named;  // resolved path -> the flag that named it
  for (const auto& [path, flag] : {std::pair{o.json, "--json"}, {o.csv, "--csv"}, {o.plot, "--plot"}}) {
    if (path.empty()) continue;
    if (mode) throw Error(flag, std::string("bench ") + mode + " prints its tables only and writes no file");
    check_named_output(path, flag, o.force, inputs);
    const auto [it, fresh] = named.emplace(resolve_named_output(path, flag, inputs), flag);
    if (!fresh) throw Error(flag, "'" + path + "' is also the " + it->second + " file: give each its own name");
  }
}

void run_bench(const BenchOptions& o) {
  if (o.gemm_libraries) return run_gemm_library_bench(o);
  if (o.lpips) return run_lpips_bench(o);
  if (o.common.distributed != "none" || o.scaling) return run_distributed_bench(o);
  if (o.reference && find_program(o.python).empty())
    throw Error("--python", "'" + o.python + "' is not an executable program (no shell runs it)");
  const std::vector<std::string> precisions = bench_precisions(o);
  const MachineLoad load_before = machine_load();
  std::vector<Row> rows;
  ModelConfig lact;
  for (const std::string& precision : precisions) {
    std::vector<Row> pass = run_precision_pass(o, precision, &lact);
    rows.insert(rows.end(), pass.begin(), pass.end());
  }
  print_table(rows);
  if (!o.variants.empty()) print_variant_table(rows);
  print_precision_ratios(rows);
  print_columns();
  if (!o.json.empty()) write_json(o.json, o, lact, rows);
  if (!o.csv.empty()) {
    if (o.variants.empty())
      write_csv(o.csv, rows);
    else
      write_file_atomically(o.csv, variant_csv(rows));
  }
  std::printf("The machine: %s before the rows, %s after.\n", load_text(load_before).c_str(),
              load_text(machine_load()).c_str());
  if (!o.plot.empty()) {
    const std::string why = untrusted_rows(rows);
    if (why.empty())
      write_plot(o.plot, o, lact, rows);
    else  // a plot of timings that spread so wide has drawn the opposite of the truth
      std::fprintf(stderr, "lact bench: --plot %s not drawn: %s (the machine: %s); run again when it is quieter\n",
                   o.plot.c_str(), why.c_str(), load_text(machine_load()).c_str());
  }
  if (o.reference) run_reference(o, lact, rows);
}

}  // namespace lact::bench
