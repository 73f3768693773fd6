// lact render: encode input views (or open a saved scene state) and render target views, with metrics against
// their ground truth and a report, for one scene or every scene of an index; or render a camera path.
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "app/flags.h"
#include "pipeline/backend_options.h"
#include "pipeline/evaluate.h"
#include "pipeline/progress.h"
#include "pipeline/scene_selection.h"
#include "core/error.h"
#include "core/scene_state_io.h"

namespace lact::app {

namespace {

struct RenderOptions {
  CommonOptions common;
  DataOptions data;
  OutputOptions out;
  std::string model, state, targets, path, video;
  int fps = 30;
};

nlohmann::json report_header(const RenderOptions& o, const Model& model, int height, int width) {
  return {{"model", o.model},
          {"config", model.config().source},
          {"data", o.data.data},
          {"size", {height, width}},
          {"views", {{"inputs", o.data.inputs}, {"targets", o.targets}}},
          {"backend", o.common.backend}};
}

// Writes the report when any scene succeeded; any failure ends in one error line (the failure itself when
// it is the only one) and a non-zero exit.
void finish(const Report& report, RunOutput& out) {
  if (report.scenes.empty() && report.failed.size() == 1) throw Error(report.failed[0].second);
  if (!report.scenes.empty()) {
    report.write(out.folder.file("report.json", out.inputs), out.folder.file("report.csv", out.inputs));
    report.print_table();
  }
  if (!report.failed.empty())
    throw Error(std::to_string(report.failed.size()) + " of " +
                std::to_string(report.failed.size() + report.scenes.size()) + " scenes failed, the first: " +
                report.failed[0].second + (report.scenes.empty() ? "" : " (see " + out.folder.root() + "/report.json)"));
}

// Render from a saved state: one scene, its model, data and preprocessing from the state's metadata.
void render_from_state(RenderOptions& o, Backend& backend, RunOutput& out) {
  const auto metadata = read_scene_state_metadata(o.state);
  if (o.model.empty()) o.model = metadata_or(metadata, "model", "");
  if (o.model.empty()) throw Error(o.state, "records no model: pass --model");
  out.inputs.add(o.model);
  if (!o.video.empty()) check_named_output(o.video, "--video", o.out.force, out.inputs, true);
  auto model = load_model_for(o.model, backend);
  LoadedSceneState loaded = load_scene_state(o.state, model->config(), backend);
  const SceneState& state = loaded.state;
  if (!o.path.empty()) return render_camera_path(*model, state, o.path, o.video, o.fps, out);

  const SceneSelection selection = plan_from_state_metadata(metadata, o.data, o.state, model->config().patch_size);
  check_memory(*model, 1, selection.height, selection.width, "--size");  // the targets, one view at a time at least
  Report report;
  report.header = report_header(o, *model, selection.height, selection.width);
  report.scenes.push_back(evaluate_scene(*model, selection, &state, o.targets, o.data.seed, out));
  finish(report, out);
}

// Every scene of --data (or the one --scene names); a scene that fails is reported and the others go on.
void render_scenes(RenderOptions& o, const Model& model, RunOutput& out) {
  if (o.data.data.empty()) throw Error("--data", "no data given");
  const int patch = model.config().patch_size;
  const SceneList list = read_scene_list(o.data.data, read_options(o.data));
  Report report;
  std::vector<const Scene*> scenes;
  for (const Scene& s : list.scenes)
    if (o.data.scene.empty() || s.name == o.data.scene) scenes.push_back(&s);
  if (o.data.scene.empty() || scenes.empty()) report.failed = list.failed;  // --scene found: others don't matter
  if (scenes.empty() && list.failed.empty()) throw Error(o.data.data, "has no scene named '" + o.data.scene + "'");
  Progress progress("scenes", static_cast<int>(scenes.size()), o.out.quiet);
  for (const Scene* scene : scenes) {
    try {
      const SceneSelection selection = plan_scene(*scene, o.data, patch);
      check_memory_for(model, selection, "--size");
      if (report.header.is_null()) report.header = report_header(o, model, selection.height, selection.width);
      report.scenes.push_back(evaluate_scene(model, selection, nullptr, o.targets, o.data.seed, out));
    } catch (const Error& e) {
      report.failed.push_back({scene->name, e.what()});
    }
    progress.step(scene->name);
  }
  if (report.header.is_null()) report.header = report_header(o, model, 0, 0);
  finish(report, out);
}

void run_render(RenderOptions& o) {
  RunOutput out(o.out);
  out.folder.check_writable();  // before any work; the folder itself is made when the first file is written
  if (o.path.empty() && o.targets.empty()) throw Error("--targets", "give target views (or --path for a camera path)");
  if (!o.video.empty() && o.path.empty()) throw Error("--video", "needs --path (a camera path to render)");
  for (const std::string& input : {o.model, o.state, o.path, o.data.data}) out.inputs.add(input);
  auto backend = make_backend(o.common);
  if (!o.state.empty()) return render_from_state(o, *backend, out);
  if (!o.video.empty()) check_named_output(o.video, "--video", o.out.force, out.inputs, true);
  auto model = load_model_for(o.model, *backend);
  apply_model_defaults(o.data, *model, true);
  if (o.data.inputs.empty()) throw Error("render", "give --inputs (to encode) or --state (a saved scene state)");
  if (o.path.empty()) return render_scenes(o, *model, out);

  const SceneSelection selection = select_scene_views(o.data, model->config().patch_size);
  add_scene_inputs(selection, out.inputs);
  if (!o.video.empty()) check_named_output(o.video, "--video", o.out.force, out.inputs, true);
  check_memory_for(*model, selection, "--size");
  const SceneState state = model->encode(selected_views(selection, selection.inputs, true));
  render_camera_path(*model, state, o.path, o.video, o.fps, out);
}

}  // namespace

void add_render_command(CLI::App& app) {
  auto o = std::make_shared<RenderOptions>();
  CLI::App* command = app.add_subcommand(
      "render",
      "Render target views (encoding the inputs first, or from a saved --state) with PSNR/SSIM against their ground "
      "truth, for one scene or every scene of an index; or render a camera path (--path) to frames and a video");
  command->add_option("--model", o->model, "Model weights (.safetensors with the config in its metadata)");
  add_data_options(*command, o->data);
  command->add_option("--state", o->state, "Scene state from `lact encode` (replaces --inputs)");
  command->add_option("--targets", o->targets, "Target views: 3,4 | 8-15 | uniform:N | random:N | fold8 | rest | all");
  command->add_option("--path", o->path, "Camera path JSON (from `lact path`) to render instead of targets");
  command->add_option("--video", o->video, "With --path: also write this MP4 (needs ffmpeg)");
  command->add_option("--fps", o->fps, "Video frame rate")->capture_default_str()->check(CLI::Range(1, 1000));
  command->add_option("--out", o->out.folder, "Output folder: OUT/<scene>/<view>.png, OUT/report.json, report.csv")
      ->capture_default_str();
  command->add_flag("--save-images", o->out.save_images, "Also write <view>_gt.png and <view>_diff.png (error map)");
  command->add_flag("--save-npy", o->out.save_npy, "Also write <view>.npy (float32 [H, W, 3] in [0, 1])");
  command->add_flag("--quiet", o->out.quiet, "No progress bar");
  command->add_flag("--force", o->out.force, "Replace an existing --video file");
  add_common_options(*command, o->common);
  command->callback([o]() { run_render(*o); });
}

}  // namespace lact::app
