// lact render: encode input views (or open a saved scene state) and render target views, with metrics against
// their ground truth and a report, for one scene or every scene of an index; or render a camera path.
#include <cstdio>
#include <filesystem>

#include "app/command_line.h"
#include "app/commands.h"
#include "app/flags.h"
#include "core/error.h"
#include "core/scene_state_io.h"
#include "pipeline/backend_options.h"
#include "pipeline/distribution.h"
#include "pipeline/evaluate.h"
#include "pipeline/progress.h"
#include "pipeline/run_agreement.h"
#include "pipeline/scene_selection.h"
#include "pipeline/video_writer.h"

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

// Writes the report when any scene succeeded (rank 0 alone across ranks); any failure ends in one error line
// (the failure itself when it is the only one) and a non-zero exit.
void finish(const Report& report, RunOutput& out, const Distribution& d) {
  on_every_rank(d, [&] {
    if (report.scenes.empty() && report.failed.size() == 1) throw Error(report.failed[0].second);
    if (!report.scenes.empty() && d.leads()) {
      report.write(out.folder.file("report.json", out.inputs), out.folder.file("report.csv", out.inputs));
      report.print_table();
    }
    if (!report.failed.empty())
      throw Error(std::to_string(report.failed.size()) + " of " +
                  std::to_string(report.failed.size() + report.scenes.size()) +
                  " scenes failed, the first: " + report.failed[0].second +
                  (report.scenes.empty() ? "" : " (see " + out.folder.root() + "/report.json)"));
  });
}

// Render from a saved state: one scene, its model, data and preprocessing from the state's metadata.
void render_from_state(RenderOptions& o, RunBackend& run, RunOutput& out) {
  const Distribution& d = run.distribution;
  std::unique_ptr<Model> model;
  LoadedSceneState loaded;
  SceneSelection selection;
  on_every_rank(d, [&] {
    const auto metadata = read_scene_state_metadata(o.state);
    if (o.model.empty()) o.model = metadata_or(metadata, "model", "");
    if (o.model.empty()) throw Error(o.state, "records no model: pass --model");
    out.inputs.add(o.model);
    if (!o.video.empty()) check_named_output(o.video, "--video", o.out.force, out.inputs, true);
    model = load_model_for(o.model, *run.backend);
    loaded = load_scene_state(o.state, model->weights(), *run.backend);
    if (!o.path.empty()) return;
    selection = plan_from_state_metadata(metadata, o.data, o.state, model->config().patch_size);
    check_memory(*model, 1, selection.height, selection.width, "--size");  // the targets, one view at a time at least
  });
  RunInputs read;
  read.model_path = o.model, read.model = model.get(), read.state_path = o.state, read.camera_path = o.path;
  if (o.path.empty()) read.selection = &selection, read.targets_spec = o.targets, read.seed = o.data.seed;
  agree_on_inputs(d, read);
  if (!o.path.empty()) {
    if (d.leads()) render_camera_path(*model, loaded.state, o.path, o.video, o.fps, out);
    return;
  }
  Report report;
  report.header = report_header(o, *model, selection.height, selection.width);
  report.scenes.push_back(evaluate_scene(*model, selection, &loaded.state, o.targets, o.data.seed, out, d));
  finish(report, out, d);
}

// One scene, its input views encoded across the ranks and its targets shared out; any failure stops every rank.
Report render_scene_across_ranks(RenderOptions& o, const Model& model, const Scene& scene, RunOutput& out,
                                 const Distribution& d) {
  Report report;
  SceneSelection selection;
  on_every_rank(d, [&] {
    selection = plan_scene(scene, o.data, model.config().patch_size);
    report.header = report_header(o, model, selection.height, selection.width);
  });
  RunInputs read;
  read.selection = &selection, read.targets_spec = o.targets, read.seed = o.data.seed;
  agree_on_inputs(d, read);
  report.scenes.push_back(evaluate_scene(model, selection, nullptr, o.targets, o.data.seed, out, d));
  return report;
}

// Every scene of --data (or the one --scene names); a scene that fails is reported and the others go on.
// Across ranks, several scenes are shared out (each rank evaluates its own alone) and one scene is evaluated
// by every rank together.
void render_scenes(RenderOptions& o, const Model& model, RunOutput& out, const Distribution& d) {
  if (o.data.data.empty()) throw Error("--data", "no data given");
  const int patch = model.config().patch_size;
  SceneList list;
  on_every_rank(d, [&] { list = read_scene_list(o.data.data, read_options(o.data)); });
  RunInputs read;
  read.model_path = o.model, read.model = &model, read.scenes = &list;
  agree_on_inputs(d, read);
  Report report;
  std::vector<const Scene*> scenes;
  for (const Scene& s : list.scenes)
    if (o.data.scene.empty() || s.name == o.data.scene) scenes.push_back(&s);
  if ((o.data.scene.empty() || scenes.empty()) && d.leads())
    report.failed = list.failed;  // --scene found: others don't matter
  if (scenes.empty() && list.failed.empty()) throw Error(o.data.data, "has no scene named '" + o.data.scene + "'");
  if (d.active() && scenes.size() == 1 && list.failed.empty())
    return finish(render_scene_across_ranks(o, model, *scenes[0], out, d), out, d);
  const auto [begin, end] = share_of(d, scenes.size());
  Progress progress("scenes", static_cast<int>(end - begin), o.out.quiet || !d.leads());
  for (size_t i = begin; i < end; ++i) {
    try {
      const SceneSelection selection = plan_scene(*scenes[i], o.data, patch);
      check_memory_for(model, selection, "--size");
      if (report.header.is_null()) report.header = report_header(o, model, selection.height, selection.width);
      report.scenes.push_back(evaluate_scene(model, selection, nullptr, o.targets, o.data.seed, out));
    } catch (const Error& e) {
      report.failed.push_back({scenes[i]->name, e.what()});
    }
    progress.step(scenes[i]->name);
  }
  report = merge_reports(d, report);
  if (report.header.is_null()) report.header = report_header(o, model, 0, 0);
  finish(report, out, d);
}

void run_render(RenderOptions& o, const RunDigest& command_line) {
  RunOutput out(o.out);
  on_every_rank(start_agreed_ranks(o.common, command_line), [&] {
    out.folder.check_writable();  // before any work; the folder itself is made when the first file is written
    if (o.path.empty() && o.targets.empty())
      throw Error("--targets", "give target views (or --path for a camera path)");
    if (!o.video.empty() && o.path.empty()) throw Error("--video", "needs --path (a camera path to render)");
    if (!o.video.empty()) check_video_output(o.video);  // a known container, ffmpeg and ffprobe: before any work
  });
  for (const std::string& input : {o.model, o.state, o.path, o.data.data}) out.inputs.add(input);
  RunBackend run = start_run_backend(o.common);
  const Distribution& d = run.distribution;
  on_every_rank(d, [&] {
    if (d.leads()) out.folder.claim(o.out.force);  // held for the job; its other ranks share it
  });
  if (!o.state.empty()) return render_from_state(o, run, out);
  if (!o.video.empty()) check_named_output(o.video, "--video", o.out.force, out.inputs, true);
  std::unique_ptr<Model> model;
  on_every_rank(d, [&] { model = load_model_for(o.model, *run.backend); });
  apply_model_defaults(o.data, *model, true);
  if (o.data.inputs.empty()) throw Error("render", "give --inputs (to encode) or --state (a saved scene state)");
  if (o.path.empty()) return render_scenes(o, *model, out, d);

  // A camera path: the inputs encoded (across the ranks), the frames rendered by rank 0.
  SceneSelection selection;
  on_every_rank(d, [&] {
    selection = select_scene_views(o.data, model->config().patch_size);
    add_scene_inputs(selection, out.inputs);
    if (!o.video.empty()) check_named_output(o.video, "--video", o.out.force, out.inputs, true);
  });
  RunInputs read;
  read.model_path = o.model, read.model = model.get(), read.camera_path = o.path, read.selection = &selection;
  agree_on_inputs(d, read);
  const SceneState state = encode_selection(*model, selection, d);
  if (d.leads()) render_camera_path(*model, state, o.path, o.video, o.fps, out);
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
  command->add_flag("--force", o->out.force,
                    "Replace an existing --video file, or a report.json/report.csv in --out that lact did not write");
  add_common_options(*command, o->common);
  add_distributed_options(*command, o->common);
  command->callback([o, command]() { run_render(*o, command_line_digest(*command)); });
}

}  // namespace lact::app
