// lact path: write camera path files (turntable, orbit, interpolation between a scene's cameras).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/commands.h"
#include "app/flags.h"
#include "app/unused_flags.h"
#include "core/camera_geometry.h"
#include "core/image_size.h"
#include "core/path_parameters.h"
#include "core/scene_state_io.h"
#include "datasets/camera_path_io.h"
#include "datasets/view_selection.h"
#include "distributed/distributed.h"
#include "pipeline/backend_options.h"
#include "pipeline/evaluate.h"
#include "pipeline/guard_rails.h"
#include "pipeline/path_frame.h"
#include "pipeline/report.h"
#include "pipeline/scene_selection.h"
#include "system/error.h"
#include "system/output_files.h"

namespace lact::app {

namespace {

struct PathOptions {
  DataOptions data;
  std::string kind, output = "path.json", keys, state;
  int frames = 120;
  PathParameters numbers;  // --hfov, --elevation, --min-radius, --max-radius, --radius, --smoothness
  bool force = false;
};

// Flags that would give cameras `render` rejects are refused here, naming the flag (the ranges lact.camera_path
// keeps too: core/path_parameters.h).
void check_path_flags(const PathOptions& o) {
  std::string flag = path_parameter_fault(o.numbers);
  if (flag.empty()) return;
  const std::string range = path_parameter_range(flag, o.numbers);
  std::replace(flag.begin(), flag.end(), '_', '-');
  throw Error("--" + flag, "must be in " + range);
}

// --size as its help promises: each side a multiple of 8, the patch of every model lact loads (render would refuse
// the path's frames only after encoding or loading a state).
void check_path_size(const std::pair<int, int>& size) {
  const auto [height, width] = size;
  if (!height || (height % 8 == 0 && width % 8 == 0)) return;
  auto down = [](int v) { return std::max(8, v / 8 * 8); };
  auto up = [](int v) { return (v + 7) / 8 * 8; };
  throw Error("--size", std::to_string(height) + "x" + std::to_string(width) +
                            " is not divisible by 8 (the patch size): use " + std::to_string(down(height)) + "x" +
                            std::to_string(down(width)) + " or " + std::to_string(up(height)) + "x" +
                            std::to_string(up(width)));
}

// Orbit and interpolate need two cameras: one camera has no point it looks at, nor a second key to go to.
void check_key_count(const std::vector<int>& keys, const PathOptions& o) {
  if (keys.size() >= 2) return;
  const std::string what = o.kind == "orbit" ? "an orbit needs at least 2 cameras (the point their axes meet)"
                                             : "an interpolation needs at least 2 cameras to go through";
  throw Error("--keys",
              what + ", but '" + (o.keys.empty() ? "all" : o.keys) + "' selects " + std::to_string(keys.size()));
}

// An orbit circles the point nearest the cameras' optical axes. A forward-facing capture's axes meet behind it
// (the desk: its median camera looks 168 deg away from that point), so the orbit would look at what no camera
// saw: said in one line, with what fits such a capture.
void warn_of_an_orbit_behind(const std::vector<Camera>& cameras) {
  const CameraLayout layout = camera_layout(cameras);
  if (layout.median_off_axis <= 90) return;
  std::fprintf(stderr,
               "lact: warning: --keys: the cameras do not look at a common point (the median one looks %.0f deg away "
               "from the point nearest their axes, which lies behind it): the orbit circles that point and shows "
               "little they saw; `lact path interpolate` goes through the cameras\n",
               layout.median_off_axis);
}

// A state's working size, "HxW" from its metadata.
std::string state_size(const std::string& state) {
  const auto metadata = read_scene_state_metadata(state);
  return metadata_or(metadata, "height", "") + "x" + metadata_or(metadata, "width", "");
}

// Without --size or --inputs: about 256x256 pixels at the aspect of the first key view, sides multiples of 8.
std::pair<int, int> default_path_size(const Camera& first) {
  constexpr double kPixels = 256.0 * 256.0;
  const double aspect = static_cast<double>(first.width) / first.height;
  auto side = [](double v) { return std::max(8, static_cast<int>(std::lround(v / 8)) * 8); };
  return {side(std::sqrt(kPixels / aspect)), side(std::sqrt(kPixels * aspect))};
}

// The scene whose cameras orbit / interpolate follow, at the working size, in the frame the path records: a
// state's (its data, scene, size and pose normalisation), or --data's with --normalize-poses.
SceneSelection path_scene(const PathOptions& o, PathFrame& frame) {
  if (o.state.empty()) {
    SceneSelection s = select_scene_views(o.data, 1);
    frame = selection_frame(s);
    return s;
  }
  const auto metadata = read_scene_state_metadata(o.state);
  frame = state_frame(metadata, o.state);
  return plan_from_state_metadata(metadata, o.data, o.state, 1);
}

std::vector<Camera> scene_path(const PathOptions& o, InputFiles& inputs, PathFrame& frame) {
  const SceneSelection s = path_scene(o, frame);
  add_scene_inputs(s, inputs);
  check_named_output(o.output, "--output", o.force, inputs);
  const std::vector<int> keys =
      select_views(o.keys.empty() ? "all" : o.keys, s.scene, false, {}, o.data.seed, "--keys");
  check_key_count(keys, o);
  SceneSelection sized = s;
  if (!sized.height) std::tie(sized.height, sized.width) = default_path_size(s.scene.views.at(keys.at(0)).camera);
  std::vector<Camera> cameras;
  for (const PosedImage& v : selected_views(sized, keys, false)) cameras.push_back(v.camera);
  if (o.kind == "interpolate") return interpolate_path_frames(cameras, o.frames, o.numbers.smoothness);
  warn_of_an_orbit_behind(cameras);
  return orbit_around(cameras, o.frames, o.numbers.radius, o.numbers.elevation);
}

// Under mpirun or srun every process would write the same file: all but the first then failed with "exists
// (pass --force)", naming the wrong cause.
void refuse_a_launch(const std::string& output) {
  if (const int processes = launched_processes(); processes > 1)
    throw Error(output, "this is one of " + std::to_string(processes) +
                            " processes of an MPI launch (mpirun, srun), each of which would write it: run lact path "
                            "once, without the launcher");
}

void run_path(const PathOptions& o) {
  refuse_a_launch(o.output);
  check_path_flags(o);
  check_path_size(o.data.size);
  if (o.kind != "turntable" && o.kind != "orbit" && o.kind != "interpolate")
    throw Error("path kind", "'" + o.kind + "' is not one of turntable, orbit, interpolate");
  if (!o.state.empty() && o.data.normalize_poses != PoseNormalization::None)
    throw Error("--normalize-poses", "not with --state: the path takes the state's own normalisation");
  InputFiles inputs;
  inputs.add(o.data.data);
  inputs.add(o.state);
  check_named_output(o.output, "--output", o.force, inputs);
  PathFrame frame;  // raw unless a state or --normalize-poses says otherwise
  frame.recorded = true;
  std::vector<Camera> path;
  if (o.kind == "turntable") {
    // Around the origin of the state's frame when given (its size too), else raw at --size or 256x256.
    if (!o.state.empty()) frame = state_frame(read_scene_state_metadata(o.state), o.state);
    const std::string recorded = o.data.size.first || o.state.empty() ? "" : state_size(o.state);
    const auto [height, width] = o.data.size.first ? o.data.size : parse_size(recorded.empty() ? "256x256" : recorded);
    path = turntable_path(o.frames, width, height, o.numbers.hfov, o.numbers.min_radius, o.numbers.max_radius,
                          o.numbers.elevation);
  } else {
    path = scene_path(o, inputs, frame);
  }
  frame.made_by = o.kind;
  write_camera_path(o.output, path, &frame);
  const std::string world = frame.raw()       ? "raw coordinates"
                            : o.state.empty() ? "normalised (--normalize-poses " + frame.normalize_poses + ")"
                                              : "normalised as " + o.state + " was";
  std::printf("%s: %zu frames (%s) at %dx%d, %s\n", o.output.c_str(), path.size(), o.kind.c_str(), path[0].height,
              path[0].width, world.c_str());
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
  command->add_option("--hfov", o->numbers.hfov, "Turntable horizontal field of view, degrees")->capture_default_str();
  command->add_option("--elevation", o->numbers.elevation, "Turntable / orbit elevation, degrees")
      ->capture_default_str();
  command->add_option("--min-radius", o->numbers.min_radius, "Turntable radius range")->capture_default_str();
  command->add_option("--max-radius", o->numbers.max_radius, "Turntable radius range")->capture_default_str();
  command->add_option("--radius", o->numbers.radius, "Orbit radius (default: the cameras' mean distance)");
  command
      ->add_option("--smoothness", o->numbers.smoothness,
                   "Interpolate: 0 linear/slerp between keys, up to 1 a Catmull-Rom spline through them (as lact "
                   "serve's path editor)")
      ->capture_default_str();
  command
      ->add_option("--keys", o->keys,
                   "Cameras to orbit around / interpolate through: 0,1,2 | 0-7 | uniform:N | random:N | fold8[:N] | "
                   "all (default all)")
      ->check(CLI::Validator(
          [](std::string& text) {
            // A path has no targets for "rest" to be the rest of: it selected every view.
            return text == "rest" ? std::string(
                                        "'rest' is every view that is not a target, and lact path takes no "
                                        "--targets: name the key views (e.g. all, uniform:8)")
                                  : std::string();
          },
          ""));
  command->add_option("--state", o->state,
                      "Make the cameras in this scene state's frame (its --normalize-poses; its data, scene and "
                      "size unless given), as `render --state` needs them");
  add_data_options(*command, o->data);
  inputs_without_targets(*command);
  command->remove_option(command->get_option("--background"));  // no images are read
  // A path has no model: the data flags' default ("the model's training pixel count") does not apply.
  command->get_option("--size")->description(
      "Working size HxW (N: NxN), divisible by 8 (default: --state's size, else about 256x256 pixels at the first "
      "key view's aspect, each side a multiple of 8; a turntable without --state: 256x256)");
  command->callback([o, command]() {
    if (o->kind == "turntable") {  // around the origin: no scene's cameras (only a state's frame and size)
      std::vector<std::string> flags = data_detail_flags();
      flags.insert(flags.begin(), "--data");
      flags.erase(std::find(flags.begin(), flags.end(), "--size"));
      flags.push_back("--keys");
      flags.push_back("--radius");
      flags.push_back("--smoothness");
      refuse_unused_flags(*command, flags, "not used by a turntable path (it reads no scene)");
    } else {
      refuse_unused_flags(*command, {"--hfov", "--min-radius", "--max-radius"}, "is for turntable paths");
      if (o->kind == "orbit") refuse_unused_flags(*command, {"--smoothness"}, "is for interpolate paths");
      if (o->kind == "interpolate") refuse_unused_flags(*command, {"--radius", "--elevation"}, "is for orbit paths");
    }
    run_path(*o);
  });
}

void add_eval_compare_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* command =
      app.add_subcommand("eval-compare", "Compare two report.json files (per scene and overall, B - A)");
  command->add_option("reports", *files, "A/report.json B/report.json")->required()->expected(2);
  command->callback([files]() { compare_reports((*files)[0], (*files)[1]); });
}

}  // namespace lact::app
