// lact path: write camera path files (turntable, orbit, interpolation between a scene's cameras).
#include <cmath>
#include <cstdio>

#include "app/commands.h"
#include "app/flags.h"
#include "core/camera_geometry.h"
#include "core/error.h"
#include "datasets/camera_path_io.h"
#include "datasets/view_selection.h"
#include "pipeline/backend_options.h"
#include "pipeline/evaluate.h"
#include "pipeline/output_files.h"
#include "pipeline/report.h"
#include "pipeline/scene_selection.h"

namespace lact::app {

namespace {

struct PathOptions {
  DataOptions data;
  std::string kind, output = "path.json", keys;
  int frames = 120;
  double hfov = 50, radius = 0, elevation = 30, min_radius = 1.7, max_radius = 3.0;
  bool force = false;
};

// Flags that would give cameras `render` rejects are refused here, naming the flag.
void check_path_flags(const PathOptions& o) {
  if (!(o.hfov > 0 && o.hfov < 180)) throw Error("--hfov", "must be in (0, 180) degrees");
  if (!(std::abs(o.elevation) < 90)) throw Error("--elevation", "must be in (-90, 90) degrees");
  if (!(o.min_radius > 0 && o.max_radius >= o.min_radius && o.max_radius < 1e6))
    throw Error("--min-radius/--max-radius", "need 0 < min <= max < 1e6");
  if (!(o.radius >= 0 && o.radius < 1e6)) throw Error("--radius", "must be in [0, 1e6) (0: the cameras' distance)");
}

void run_path(const PathOptions& o) {
  check_path_flags(o);
  InputFiles inputs;
  inputs.add(o.data.data);
  check_named_output(o.output, "--output", o.force, inputs);
  std::vector<Camera> path;
  const auto [height, width] = parse_size(o.data.size.empty() ? "256x256" : o.data.size);
  if (o.kind == "turntable") {
    path = turntable_path(o.frames, width, height, o.hfov, o.min_radius, o.max_radius, o.elevation);
  } else {
    // orbit / interpolate follow a scene's cameras (at the working size, after pose normalisation).
    const SceneSelection s = select_scene_views(o.data, 1);
    add_scene_inputs(s, inputs);
    check_named_output(o.output, "--output", o.force, inputs);
    const std::vector<int> keys =
        select_views(o.keys.empty() ? "all" : o.keys, s.scene, false, {}, o.data.seed, "--keys");
    SceneSelection sized = s;
    if (!sized.height) sized.height = height, sized.width = width;
    std::vector<Camera> cameras;
    for (const PosedImage& v : selected_views(sized, keys, false)) cameras.push_back(v.camera);
    if (o.kind == "interpolate") {
      path = interpolate_path_frames(cameras, o.frames);
    } else if (o.kind == "orbit") {
      path = orbit_around(cameras, o.frames, o.radius, o.elevation);
    } else {
      throw Error("lact path", "unknown path kind '" + o.kind + "' (turntable, orbit, interpolate)");
    }
  }
  write_camera_path(o.output, path);
  std::printf("%s: %zu frames (%s) at %dx%d\n", o.output.c_str(), path.size(), o.kind.c_str(), path[0].height,
              path[0].width);
}

}  // namespace

void add_path_command(CLI::App& app) {
  auto o = std::make_shared<PathOptions>();
  CLI::App* command = app.add_subcommand(
      "path",
      "Write a camera path JSON: turntable (the official demo's: hfov 50, radius 1.7-3.0, elevation 30+-15, "
      "z up), orbit (around the point a scene's cameras look at) or interpolate (slerp through its cameras)");
  command->add_option("kind", o->kind, "turntable | orbit | interpolate")->required();
  command->add_option("-o,--output", o->output, "Path file to write")->capture_default_str();
  command->add_option("--frames", o->frames, "Frames in all (interpolate: from the first key to the last)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  command->add_flag("--force", o->force, "Replace an existing output file (never one of the inputs)");
  command->add_option("--hfov", o->hfov, "Turntable horizontal field of view, degrees")->capture_default_str();
  command->add_option("--elevation", o->elevation, "Turntable / orbit elevation, degrees")->capture_default_str();
  command->add_option("--min-radius", o->min_radius, "Turntable radius range")->capture_default_str();
  command->add_option("--max-radius", o->max_radius, "Turntable radius range")->capture_default_str();
  command->add_option("--radius", o->radius, "Orbit radius (default: the cameras' mean distance)");
  command->add_option("--keys", o->keys, "Cameras to orbit around / interpolate through (view selection; default all)");
  add_data_options(*command, o->data);
  command->callback([o]() { run_path(*o); });
}

void add_eval_compare_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* command =
      app.add_subcommand("eval-compare", "Compare two report.json files (per scene and overall, B - A)");
  command->add_option("reports", *files, "A/report.json B/report.json")->required()->expected(2);
  command->callback([files]() { compare_reports((*files)[0], (*files)[1]); });
}

}  // namespace lact::app
