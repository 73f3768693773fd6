// `lact bench --lpips`: what LPIPS (core/lpips.h) adds to an evaluation, against what it measures. Per target view
// `lact render --lpips` computes the backbone's (--lpips-net: AlexNet or VGG16) features of the target, the render and
// the nearest input (three passes) and two distances; this times that on random weights at each --size, beside one
// rendered view of the config (encoded from --views inputs, random weights), on the same backend and threads.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "bench/bench_inputs.h"
#include "bench/bench_row.h"
#include "bench/bench_run.h"
#include "core/lpips.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "pipeline/backend_options.h"
#include "system/error.h"

namespace lact::bench {

namespace {

// The median of `repeat` timings of `work` after `warmup` untimed runs.
double median_seconds(Backend& be, int warmup, int repeat, const std::function<void()>& work) {
  Samples samples;
  for (int r = -warmup; r < repeat; ++r) {
    const double start = now_seconds();
    work();
    be.synchronize();
    if (r >= 0) samples.values.push_back(now_seconds() - start);
  }
  return samples.median();
}

// One view's LPIPS work in lact render --lpips: three feature passes, two distances.
void lpips_of_one_view(const Lpips& lpips, const Image& target, const Image& render, const Image& nearest) {
  const Lpips::Features truth = lpips.features(target);
  lpips.distance(lpips.features(render), truth);
  lpips.distance(lpips.features(nearest), truth);
}

}  // namespace

void run_lpips_bench(const BenchOptions& o) {
  auto backend = make_backend(o.common);
  const int views = parse_list(o.views, "--views", 100000).front();
  const std::vector<std::pair<int, int>> sizes = parse_size_list(o.sizes, "--size", kMaxImageSide);
  check_patch_divides(sizes, lact_config(o).patch_size);
  const LpipsNetwork& net = lpips_network(*lpips_net_named(o.lpips_net));  // checked by the flag
  const int smallest = lpips_smallest_side(net);
  for (const auto& [height, width] : sizes)  // all before the first size's timing
    if (height < smallest || width < smallest)
      throw Error("--size", std::to_string(height) + "x" + std::to_string(width) + ": LPIPS's " + net.name +
                                " needs at least " + std::to_string(smallest) + " pixels a side");
  const Model model(random_model_weights(lact_config(o), *backend, 1), *backend);
  const Lpips lpips(*backend, 1, net.net);
  std::printf("lact bench --lpips: %s (%s), config %s (%d layers, dim %d) from %d input views, random %s weights\n",
              backend->name().c_str(), backend->device_description().c_str(), o.config.c_str(), model.config().layers,
              model.config().dim, views, net.name);
  std::printf("%-10s %16s %18s %14s\n", "size", "LPIPS ms / view", "render ms / view", "LPIPS / render");
  for (const auto& [height, width] : sizes) {
    const std::vector<PosedImage> inputs = bench_views(views, height, width, true, 0);
    const std::vector<Camera> target = {bench_views(1, height, width, false, 1)[0].camera};
    const SceneState state = model.encode(inputs);
    Image rendered;
    const double render_s =
        median_seconds(*backend, o.warmup, o.repeat, [&] { rendered = model.render(state, target)[0]; });
    const Image& truth = inputs[0].image;
    const Image& nearest = inputs[std::min<size_t>(1, inputs.size() - 1)].image;
    const double lpips_s =
        median_seconds(*backend, o.warmup, o.repeat, [&] { lpips_of_one_view(lpips, truth, rendered, nearest); });
    std::printf("%4dx%-5d %16.1f %18.1f %14.3f\n", height, width, 1000 * lpips_s, 1000 * render_s, lpips_s / render_s);
  }
  std::printf(
      "\nLPIPS ms / view: %s's features of the target, the render and the nearest input and two distances (what "
      "lact render --lpips adds per target view), median of --repeat after --warmup; render ms / view: one target "
      "view rendered from the encoded state, likewise.\n",
      net.name);
}

}  // namespace lact::bench
