// lact bench: encode and render timings on random weights, sustained GFLOP/s next to the machine's sgemm,
// and (with --reference) the PyTorch reference timed in the same run, as ratios.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "core/error.h"
#include "core/model.h"
#include "core/random_weights.h"

#ifndef LACT_SOURCE_DIR
#define LACT_SOURCE_DIR "."
#endif

namespace lact::app {

namespace {

struct BenchOptions {
  CommonOptions common;
  std::string config = "lact_l24_d768_ttt2x", model, size = "128x128", python = "/usr/bin/python3";
  int views = 2, targets = 2, repeat = 1;
  bool reference = false;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best of three 1024^3 products through the backend.
double sgemm_gflops(Backend& be) {
  const int64_t n = 1024;
  Tensor a = be.empty({n, n}), b = be.empty({n, n}), c = be.empty({n, n});
  be.fill(a, 0.5f);
  be.fill(b, 0.25f);
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const double t = now_seconds();
    matmul(be, a, false, b, true, c);
    be.synchronize();
    if (i) best = std::min(best, now_seconds() - t);
  }
  return 2.0 * n * n * n / best / 1e9;
}

// Cameras on a circle looking at the origin, images of smooth noise.
std::vector<PosedImage> bench_views(int count, int height, int width, bool with_images, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<PosedImage> views(count);
  for (int i = 0; i < count; ++i) {
    const double angle = 2.0 * M_PI * (i + 0.5 * seed) / std::max(count, 1);
    const double cx = 2.5 * std::cos(angle), cy = 2.5 * std::sin(angle), cz = 0.8;
    double f[3] = {-cx, -cy, -cz};
    const double fn = std::sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (double& v : f) v /= fn;
    double r[3] = {f[1], -f[0], 0.0};  // forward x up(z)
    const double rn = std::sqrt(r[0] * r[0] + r[1] * r[1]);
    r[0] /= rn, r[1] /= rn;
    const double d[3] = {f[1] * r[2] - f[2] * r[1], f[2] * r[0] - f[0] * r[2], f[0] * r[1] - f[1] * r[0]};
    Camera& c = views[i].camera;
    c.width = width, c.height = height;
    c.fx = c.fy = 1.1f * width, c.cx = 0.5f * width, c.cy = 0.5f * height;
    c.c2w = {r[0], d[0], f[0], cx, r[1], d[1], f[1], cy, r[2], d[2], f[2], cz, 0, 0, 0, 1};
    if (with_images) {
      Image& img = views[i].image;
      img.width = width, img.height = height;
      img.rgb.resize(static_cast<size_t>(width) * height * 3);
      for (float& v : img.rgb) v = u(rng);
    }
  }
  return views;
}

void run_bench(const BenchOptions& o) {
  auto backend = make_backend(o.common);
  const auto [height, width] = parse_size(o.size);
  ModelWeights weights = o.model.empty() ? random_model_weights(builtin_model_config(o.config), *backend, 1)
                                         : load_model(o.model, *backend);
  const Model model(std::move(weights), *backend);
  const ModelConfig& config = model.config();
  const int patch = config.patch_size;
  if (height % patch || width % patch) throw Error("--size", "must be divisible by the patch size");
  const int64_t per_view = static_cast<int64_t>(height / patch) * (width / patch);

  const double gemm = sgemm_gflops(*backend);
  const auto inputs = bench_views(o.views, height, width, true, 0);
  std::vector<Camera> cameras;
  for (const PosedImage& v : bench_views(o.targets, height, width, false, 1)) cameras.push_back(v.camera);

  double encode_s = 1e30, render_s = 1e30;
  SceneState state;
  for (int r = 0; r < o.repeat; ++r) {
    double t = now_seconds();
    state = model.encode(inputs);
    backend->synchronize();
    encode_s = std::min(encode_s, now_seconds() - t);
    t = now_seconds();
    model.render(state, cameras);
    render_s = std::min(render_s, (now_seconds() - t) / o.targets);
  }
  const double encode_gflops = model.encode_flops(o.views * per_view, per_view) / encode_s / 1e9;
  const double render_gflops = model.render_flops(per_view) / render_s / 1e9;
  std::printf("lact bench: %s, %d input views at %dx%d (%lld tokens), %s backend, %d thread(s)\n",
              o.model.empty() ? o.config.c_str() : o.model.c_str(), o.views, height, width,
              static_cast<long long>(o.views * per_view), backend->name().c_str(), o.common.threads);
  std::printf("  sgemm 1024^3:       %8.1f GFLOP/s\n", gemm);
  std::printf("  encode:             %8.3f s    (%6.1f GFLOP/s sustained, %.0f%% of sgemm)\n", encode_s, encode_gflops,
              100.0 * encode_gflops / gemm);
  std::printf("  render per view:    %8.3f s    (%6.1f GFLOP/s sustained, %.0f%% of sgemm)\n", render_s, render_gflops,
              100.0 * render_gflops / gemm);

  if (!o.reference) return;
  if (height != width) throw Error("--reference", "the PyTorch reference bench takes square sizes only");
  const std::string command = o.python + " " + LACT_SOURCE_DIR + "/tools/reference/bench_reference.py --views-in " +
                              std::to_string(o.views) + " --views-out " + std::to_string(o.targets) + " --size " +
                              std::to_string(height) + " --threads " +
                              std::to_string(o.common.threads > 0 ? o.common.threads : 0) +
                              (o.model.empty() ? "" : " --model " + o.model);
  std::printf("  reference: %s\n", command.c_str());
  std::fflush(stdout);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw Error("--reference", "cannot run " + o.python);
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe.get())) output.append(buffer, n);
  const size_t brace = output.rfind('{');
  nlohmann::json ref;
  try {
    ref = nlohmann::json::parse(output.substr(brace == std::string::npos ? 0 : brace));
  } catch (const std::exception&) {
    throw Error("--reference", "the PyTorch reference printed no timing JSON (is torch installed for " + o.python + "?)");
  }
  const double ref_encode = ref.at("encode_s").get<double>(), ref_render = ref.at("render_s_per_view").get<double>();
  std::printf("  PyTorch reference:  encode %.3f s, render %.3f s/view\n", ref_encode, ref_render);
  std::printf("  lact speed-up:      encode %.2fx, render %.2fx (same run, same machine)\n", ref_encode / encode_s,
              ref_render / render_s);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* command = app.add_subcommand("bench", "Time encode and render on random weights (not a test)");
  command->add_option("--config", o->config, "Built-in config for random weights")->capture_default_str();
  command->add_option("--model", o->model, "Time this model instead of random weights");
  command->add_option("--views", o->views, "Input views")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--targets", o->targets, "Rendered views")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_option("--size", o->size, "View size HxW")->capture_default_str();
  command->add_option("--repeat", o->repeat, "Timed repetitions (best is reported)")->capture_default_str()->check(CLI::PositiveNumber);
  command->add_flag("--reference", o->reference, "Also time the PyTorch reference (tools/reference) in this run");
  command->add_option("--python", o->python, "Python with torch for --reference")->capture_default_str();
  add_common_options(*command, o->common);
  command->callback([o]() { run_bench(*o); });
}

}  // namespace lact::app
