// lact bench: LaCT and the full-attention baseline timed in one process on the same inputs (random weights):
// encode seconds, render FPS, state size and sustained GFLOP/s over a grid of view counts and sizes, as a
// markdown table, JSON, CSV and a log-log plot; optionally the PyTorch reference in the same run.
#include <sys/sysinfo.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "app/bench_options.h"
#include "app/bench_row.h"
#include "app/command_line.h"
#include "app/commands.h"
#include "app/flags.h"
#include "app/plot.h"
#include "core/camera_geometry.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/flop_model.h"
#include "core/memory_estimate.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "pipeline/backend_options.h"
#include "pipeline/output_files.h"
#include "pipeline/subprocess.h"

#ifndef LACT_SOURCE_DIR
#define LACT_SOURCE_DIR "."
#endif

namespace lact::app {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int> parse_list(const std::string& text, const char* flag, int max) {
  std::vector<int> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;  // all of the item must be the number: "2x" or "2.5" is not 2
    try {
      values.push_back(std::stoi(item, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw Error(flag, "'" + text.substr(0, 40) + "' is not a list of numbers like 2,4,8");
    if (values.back() <= 0 || values.back() > max) throw Error(flag, "values must be in 1.." + std::to_string(max));
  }
  if (values.empty()) throw Error(flag, "empty list");
  return values;
}

// The paper's config, optionally scaled: --layers N --dim D (attention heads of 64 when D allows).
ModelConfig lact_config(const BenchOptions& o) {
  if (o.layers <= 0 && o.dim <= 0) return builtin_model_config(o.config);
  nlohmann::json json = builtin_model_config(o.config).source;
  const int dim = o.dim > 0 ? o.dim : json["dim"].get<int>();
  if (o.layers > 0) json["layers"] = o.layers;
  json["dim"] = dim;
  json["block_config"][0]["params"]["head_dim"] = dim % 64 == 0 ? 64 : dim;
  json["block_config"][1]["params"]["head_dim"] = dim;
  return parse_model_config(json, "bench config");
}

// The same backbone with every TTT layer replaced by global attention (the paper's baseline).
ModelConfig full_attention_config(const ModelConfig& lact) {
  nlohmann::json json = lact.source;
  for (auto& module : json["block_config"])
    if (module["type"].get<std::string>().find("FastWeight") != std::string::npos)
      module = {{"type", "lact.GlobalAttention"},
                {"length_dim", "vl"},
                {"params", {{"head_dim", json["block_config"][0]["params"]["head_dim"]}, {"use_qk_norm", true}}}};
  return parse_model_config(json, "full-attention config");
}

// The models to time: --models (lact, full), or with --variants every listed TTT variant of the config.
std::vector<std::pair<std::string, ModelConfig>> bench_models(const BenchOptions& o, const ModelConfig& lact) {
  std::vector<std::pair<std::string, ModelConfig>> models;
  std::stringstream stream(o.variants.empty() ? o.models : o.variants);
  for (std::string m; std::getline(stream, m, ',');) {
    if (!o.variants.empty()) {
      if (!o.model.empty()) throw Error("--variants", "times random weights of a built-in config, not --model");
      const ModelConfig config = with_ttt_variant(lact, m, "--variants");
      models.push_back({config.ttt_variant().label(), config});
    } else if (m == "lact" || m == "full") {
      models.push_back({m, m == "lact" ? lact : full_attention_config(lact)});
    } else {
      throw Error("--models", "'" + m + "' is not lact or full");
    }
  }
  return models;
}

// The backend's own matrix-product rate at its precision (the ceiling the model's GFLOP/s are read
// against): n^3 on random data (not constants: some units run faster on zeros), best of 3 after a warm-up.
double gemm_gflops(Backend& be, int64_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> host(static_cast<size_t>(n * n));
  for (float& v : host) v = u(rng);
  Tensor a = be.from_host({n, n}, host.data());
  for (float& v : host) v = u(rng);
  Tensor b = be.from_host({n, n}, host.data()), c = be.empty({n, n});
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const double t = now_seconds();
    matmul(be, a, false, b, true, c);
    be.synchronize();
    if (i) best = std::min(best, now_seconds() - t);
  }
  return 2.0 * n * n * n / best / 1e9;
}

// Cameras on a circle looking at the origin; images of uniform noise.
std::vector<PosedImage> bench_views(int count, int height, int width, bool with_images, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<PosedImage> views(count);
  for (int i = 0; i < count; ++i) {
    const double angle = 2.0 * M_PI * (i + 0.5 * seed) / std::max(count, 1);
    Camera& c = views[i].camera;
    c = pinhole(width, height, 50);
    c.c2w = look_at({2.5 * std::cos(angle), 2.5 * std::sin(angle), 0.8}, {0, 0, 0}, {0, 0, 1});
    if (with_images) {
      views[i].image = Image{width, height, std::vector<float>(static_cast<size_t>(width) * height * 3)};
      for (float& v : views[i].image.rgb) v = u(rng);
    }
  }
  return views;
}

namespace {

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
    row.skipped = "needs about " + std::to_string(static_cast<int>(need / (1 << 30))) + " GiB > memory limit";
    return row;
  }
  const auto inputs = bench_views(views, height, width, true, 0);
  std::vector<Camera> cameras;
  for (const PosedImage& v : bench_views(o.targets, height, width, false, 1)) cameras.push_back(v.camera);
  SceneState state;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    double t = now_seconds();
    state = model.encode(inputs);
    model.backend().synchronize();
    const double e = now_seconds() - t;
    t = now_seconds();
    model.render(state, cameras);
    model.backend().synchronize();
    const double rs = (now_seconds() - t) / o.targets;
    if (r >= 0) row.encode.values.push_back(e), row.render.values.push_back(rs);
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

void print_table(const std::vector<Row>& rows) {
  std::printf(
      "\n| model | precision | views | size | tokens | open s | encode s | encode min s | encode spread | "
      "render FPS | render spread | state MiB | encode GFLOP/s | render GFLOP/s | full/LaCT encode | LaCT/full FPS |"
      "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    if (!r.skipped.empty()) {
      std::printf("| %s | %s | %d | %dx%d | %lld | skipped: %s | | | | | | | | | | |\n", r.model.c_str(),
                  r.precision.c_str(), r.views, r.height, r.width, static_cast<long long>(r.tokens), r.skipped.c_str());
      continue;
    }
    std::string ratios = " | |";
    if (r.model == "full")
      for (const Row& l : rows)
        if (l.model == "lact" && l.views == r.views && l.height == r.height && l.width == r.width &&
            l.skipped.empty()) {
          char text[64];
          std::snprintf(text, sizeof(text), " %.2fx | %.2fx |", r.encode_s / l.encode_s, l.render_fps / r.render_fps);
          ratios = text;
        }
    const std::string open = r.open_s < 0 ? "-" : std::to_string(r.open_s).substr(0, 5);
    std::printf("| %s | %s | %d | %dx%d | %lld | %s | %.3f | %.3f | %.0f%% | %.2f | %.0f%% | %.1f | %.1f | %.1f |%s\n",
                r.model.c_str(), r.precision.c_str(), r.views, r.height, r.width, static_cast<long long>(r.tokens),
                open.c_str(), r.encode_s, r.encode.min(), 100 * r.encode.spread(), r.render_fps,
                100 * r.render.spread(), r.state_mib, r.encode_gflops, r.render_gflops, ratios.c_str());
  }
}

nlohmann::json profile_json(const std::vector<OpProfile>& profile) {
  nlohmann::json out = nlohmann::json::array();
  for (const OpProfile& p : profile) out.push_back({{"op", p.op}, {"calls", p.calls}, {"ms", p.milliseconds}});
  return out;
}

void print_profile(const char* what, const Row& r, const std::vector<OpProfile>& profile) {
  double total = 0;
  for (const OpProfile& p : profile) total += p.milliseconds;
  std::printf("\n%s %s, %d views %dx%d: device time by op (%.1f ms in all)\n", r.model.c_str(), what, r.views, r.height,
              r.width, total);
  std::printf("| op | calls | ms | share |\n|---|---|---|---|\n");
  for (const OpProfile& p : profile)
    std::printf("| %s | %lld | %.2f | %.1f%% |\n", p.op.c_str(), static_cast<long long>(p.calls), p.milliseconds,
                total > 0 ? 100.0 * p.milliseconds / total : 0.0);
}

void print_profiles(const std::vector<Row>& rows, const std::string& backend) {
  bool any = false;
  for (const Row& r : rows) {
    if (r.encode_profile.empty()) continue;
    any = true;
    print_profile("encode", r, r.encode_profile);
    print_profile("render", r, r.render_profile);
  }
  if (!any) std::printf("\n--profile: the %s backend does not time ops (the cuda backend does)\n", backend.c_str());
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j{{"model", r.model},  {"precision", r.precision}, {"gemm_gflops", r.gemm_gflops},
                     {"views", r.views},  {"height", r.height},       {"width", r.width},
                     {"tokens", r.tokens}};
    if (r.skipped.empty()) {
      j.update({{"encode_s", r.encode_s},
                {"render_fps", r.render_fps},
                {"state_mib", r.state_mib},
                {"encode_gflops", r.encode_gflops},
                {"render_gflops", r.render_gflops},
                {"encode_min_s", r.encode.min()},
                {"encode_max_s", r.encode.max()},
                {"encode_samples_s", r.encode.values},
                {"render_samples_s_per_view", r.render.values},
                {"open_s", r.open_s < 0 ? nlohmann::json() : nlohmann::json(r.open_s)}});
      if (!r.encode_profile.empty())
        j.update(
            {{"encode_profile", profile_json(r.encode_profile)}, {"render_profile", profile_json(r.render_profile)}});
    } else {
      j["skipped"] = r.skipped;
    }
    out.push_back(j);
  }
  return out;
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  std::ostringstream out;
  // One row per size: both models side by side.
  out << "views,height,width,tokens,lact_encode_s,full_encode_s,encode_ratio_full_over_lact,lact_render_fps,"
         "full_render_fps,render_ratio_lact_over_full,lact_state_mib,full_state_mib\n";
  for (const Row& l : rows) {
    if (l.model != "lact") continue;
    const Row* f = nullptr;
    for (const Row& r : rows)
      if (r.model == "full" && r.views == l.views && r.height == l.height && r.width == l.width) f = &r;
    auto value = [](const Row* r, double Row::*field) {
      return r && r->skipped.empty() ? std::to_string(r->*field) : std::string();
    };
    const bool both = f && f->skipped.empty() && l.skipped.empty();
    out << l.views << "," << l.height << "," << l.width << "," << l.tokens << "," << value(&l, &Row::encode_s) << ","
        << value(f, &Row::encode_s) << "," << (both ? std::to_string(f->encode_s / l.encode_s) : "") << ","
        << value(&l, &Row::render_fps) << "," << value(f, &Row::render_fps) << ","
        << (both ? std::to_string(l.render_fps / f->render_fps) : "") << "," << value(&l, &Row::state_mib) << ","
        << value(f, &Row::state_mib) << "\n";
  }
  write_file_atomically(path, out.str());
}

void write_plot(const std::string& path, const std::vector<Row>& rows) {
  PlotPanel encode{"encode time vs input tokens", "input tokens", "encode s", {}};
  PlotPanel render{"render speed vs input tokens", "input tokens", "render FPS", {}};
  static const std::array<std::array<unsigned char, 3>, 8> kColours = {{{20, 90, 200},
                                                                        {210, 60, 30},
                                                                        {40, 160, 60},
                                                                        {150, 60, 180},
                                                                        {230, 160, 20},
                                                                        {20, 170, 190},
                                                                        {120, 120, 120},
                                                                        {200, 60, 140}}};
  std::vector<std::string> names;  // in the order they were run
  for (const Row& r : rows)
    if (std::find(names.begin(), names.end(), r.model) == names.end()) names.push_back(r.model);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string label = names[i] == "lact" ? "LaCT" : names[i] == "full" ? "full attention" : names[i];
    PlotSeries e{label, kColours[i % kColours.size()], {}};
    PlotSeries f = e;
    for (const Row& r : rows)
      if (r.model == names[i] && r.skipped.empty()) {
        e.points.push_back({double(r.tokens), r.encode_s});
        f.points.push_back({double(r.tokens), r.render_fps});
      }
    std::sort(e.points.begin(), e.points.end());
    std::sort(f.points.begin(), f.points.end());
    if (!e.points.empty()) encode.series.push_back(e), render.series.push_back(f);
  }
  write_loglog_png(path, {encode, render});
}

// The PyTorch reference (fp32, the official code's own precision on the CPU) at `lact`'s views and size, against
// every LaCT row of that size timed in this run (one per precision).
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

// Every row at a precision other than fp32 against the same model, views and size at fp32 in this run.
void print_precision_ratios(const std::vector<Row>& rows) {
  bool header = false;
  for (const Row& r : rows) {
    if (r.precision == "fp32" || !r.skipped.empty()) continue;
    for (const Row& base : rows)
      if (base.precision == "fp32" && base.skipped.empty() && base.model == r.model && base.views == r.views &&
          base.height == r.height) {
        if (!header) std::printf("\nAgainst fp32 in this run (median over median):\n");
        header = true;
        std::printf("  %s %d views %dx%d at %s: encode %.2fx, render %.2fx the speed at fp32\n", r.model.c_str(),
                    r.views, r.height, r.width, r.precision.c_str(), base.encode_s / r.encode_s,
                    r.render_fps / base.render_fps);
      }
  }
}

// One precision's pass: its backend, the model opened (timed), every model x views x size.
std::vector<Row> run_precision_pass(const BenchOptions& o, const std::string& precision, ModelConfig* lact_out) {
  CommonOptions common = o.common;
  common.precision = precision;
  auto backend = make_backend(common);
  const std::vector<int> views = parse_list(o.views, "--views", 100000),
                         sizes = parse_list(o.sizes, "--size", kMaxImageSide);
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
  const double memory_limit =
      o.max_memory_gb > 0 ? o.max_memory_gb * (1 << 30) : (available > 0 ? 0.9 * available : 0.7 * physical);
  const int64_t gemm_n = backend->name() == "cuda" ? 8192 : 1024;
  const double gemm = gemm_gflops(*backend, gemm_n);
  std::printf("lact bench: %s (%s), %d thread(s), %s gemm %lld^3 %.1f GFLOP/s; config %s, %d layers, dim %d\n",
              backend->name().c_str(), backend->device_description().c_str(), o.common.threads, precision.c_str(),
              static_cast<long long>(gemm_n), gemm, o.model.empty() ? o.config.c_str() : o.model.c_str(), lact.layers,
              lact.dim);
  std::fflush(stdout);
  std::vector<Row> rows;
  std::vector<double> measured(built.size(), 0.0);  // sustained GFLOP/s so far, to predict larger sizes
  for (int size : sizes)
    for (int v : views)
      for (size_t m = 0; m < built.size(); ++m) {
        Row row = run_one(built[m].first, *built[m].second, v, size, size, o, measured[m], memory_limit);
        row.precision = precision_name(backend->precision());
        row.gemm_gflops = gemm;
        row.device = backend->device_description();
        if (built[m].first == "lact") row.open_s = open_s;
        if (row.skipped.empty()) measured[m] = std::max(measured[m], row.encode_gflops);
        std::fprintf(stderr, "  %s %s %d views %dx%d: %s\n", row.model.c_str(), row.precision.c_str(), v, size, size,
                     row.skipped.empty() ? (std::to_string(row.encode_s) + " s encode").c_str() : row.skipped.c_str());
        rows.push_back(row);
      }
  if (o.profile) print_profiles(rows, backend->name());
  return rows;
}

void run_bench(const BenchOptions& o) {
  if (o.gemm_libraries) return run_gemm_library_bench(o);
  if (o.common.distributed != "none" || o.scaling) return run_distributed_bench(o);
  if (o.reference && find_program(o.python).empty())
    throw Error("--python", "'" + o.python + "' is not an executable program (no shell runs it)");
  InputFiles inputs;
  inputs.add(o.model);
  for (const auto& [path, flag] : {std::pair{o.json, "--json"}, {o.csv, "--csv"}, {o.plot, "--plot"}})
    if (!path.empty()) check_named_output(path, flag, o.force, inputs);
  // A precision other than fp32 is timed beside fp32 in the same run (the ratio users choose by), fp32 first.
  std::vector<std::string> precisions = {o.common.precision};
  if (o.common.precision != "fp32" && !o.no_fp32_baseline) precisions.insert(precisions.begin(), "fp32");
  std::vector<Row> rows;
  ModelConfig lact;
  for (const std::string& precision : precisions) {
    std::vector<Row> pass = run_precision_pass(o, precision, &lact);
    rows.insert(rows.end(), pass.begin(), pass.end());
  }
  print_table(rows);
  if (!o.variants.empty()) print_variant_table(rows);
  print_precision_ratios(rows);
  std::printf(
      "\nColumns: tokens = input views x (size/8)^2; open s = reading --model (- for random weights); "
      "encode s = median of --repeat after --warmup, its minimum, spread = (max - min) / median; render FPS = "
      "target views rendered per second (median); state MiB = fast weights (LaCT, fixed) or KV cache (full attention, "
      "grows with tokens); GFLOP/s from counted FLOPs (the gemm rate above is the ceiling); ratios measured in this "
      "run.\n");
  if (!o.json.empty()) {
    nlohmann::json gemm_rates;
    for (const Row& r : rows) gemm_rates[r.precision] = r.gemm_gflops;
    const nlohmann::json json{
        {"format", "lact bench v3"},       {"gemm_gflops", gemm_rates},
        {"threads", o.common.threads},     {"device", rows.empty() ? o.common.backend : rows.front().device},
        {"precision", o.common.precision}, {"config", lact.source},
        {"rows", rows_json(rows)}};
    write_file_atomically(o.json, json.dump(1) + "\n");
  }
  if (!o.csv.empty()) {
    if (o.variants.empty())
      write_csv(o.csv, rows);
    else
      write_file_atomically(o.csv, variant_csv(rows));
  }
  if (!o.plot.empty()) write_plot(o.plot, rows);
  if (o.reference) run_reference(o, rows);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* command = app.add_subcommand(
      "bench",
      "Time LaCT and the full-attention baseline on random weights over views x sizes (not a test). "
      "Table columns: model, views, size, tokens (input), encode s, render FPS, state MiB, encode and "
      "render GFLOP/s, full/LaCT encode ratio, LaCT/full render-speed ratio");
  command
      ->add_option("--config", o->config,
                   "Built-in config (lact_l24_d768_ttt2x, lact_l24_d768_ttt4x, lact_l14_d768_ttt2x), optionally "
                   "with a TTT variant: NAME:v2 (baseline, v1..v4, v6 or the authors' ttt_loss_type)")
      ->capture_default_str();
  // Given, they must be in range: 0 or less would silently mean "the config's own" (as when not given).
  command->add_option("--layers", o->layers, "Scale the config: layers")->check(CLI::Range(1, 1024));
  command->add_option("--dim", o->dim, "Scale the config: width (attention heads of 64, one fast-weight head)")
      ->check(CLI::Range(1, 16384));
  command->add_option("--model", o->model, "Time this LaCT model file instead of random weights");
  command->add_option("--models", o->models, "Which models: lact,full")->capture_default_str();
  command->add_option("--variants", o->variants,
                      "Time TTT variants of the config instead of --models, e.g. baseline,v1,v2,v3,v4,v6 (the "
                      "authors' ttt_loss_type keys work too); prints each one's speed-ups and state against the "
                      "baseline beside the FLOP count's prediction; --csv writes that table");
  command->add_option("--views", o->views, "Input view counts, e.g. 2,4,8,16,32,48")->capture_default_str();
  command->add_option("--size", o->sizes, "Square view sizes, e.g. 128,256,512")->capture_default_str();
  command->add_option("--targets", o->targets, "Rendered views per measurement")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--repeat", o->repeat, "Timed repetitions (median, minimum and spread reported)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--warmup", o->warmup, "Untimed runs first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command->add_option("--max-seconds", o->max_seconds, "Skip sizes whose encode is predicted to take longer")
      ->capture_default_str()
      ->check(finite_range(0, 1e9));
  command
      ->add_option("--max-memory-gb", o->max_memory_gb,
                   "Skip sizes estimated to need more (default 0: 90% of the backend's available memory, 70% of RAM "
                   "where that is unknown)")
      ->check(finite_range(0, kMaxMemoryLimitGb));
  command->add_option("--json", o->json, "Write every row as JSON");
  command->add_option("--csv", o->csv, "Write one row per size (both models, their ratios) as CSV");
  command->add_option("--plot", o->plot, "Write a log-log PNG of encode time and render FPS against input tokens");
  command->add_flag("--reference", o->reference,
                    "Also time the PyTorch reference (tools/reference) on the first LaCT size");
  command->add_flag("--profile", o->profile,
                    "One more run per size with device time by op (encode and render tables; the cuda backend)");
  command->add_option("--python", o->python, "Python with torch for --reference")->capture_default_str();
  command->add_flag("--force", o->force, "Replace existing --json / --csv / --plot files");
  command->add_flag("--no-fp32-baseline", o->no_fp32_baseline,
                    "With --precision bf16 / tf32: do not also time fp32 in the same run");
  command->add_flag("--gemm-libraries", o->gemm_libraries,
                    "Time the model's matrix-product shapes (first --views and --size) on each CPU library: OpenBLAS "
                    "fp32, oneDNN fp32, oneDNN bf16");
  add_common_options(*command, o->common);
  add_distributed_bench_options(*command, *o);
  command->callback([o, command]() {
    // Across ranks, the first exchange: every rank runs this bench (pipeline/run_agreement.h).
    if (o->common.distributed != "none") start_agreed_ranks(o->common, command_line_digest(*command));
    run_bench(*o);
  });
}

}  // namespace lact::app
