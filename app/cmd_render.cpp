// lact render: encode input views (or open a saved scene state) and render target views, with metrics against
// their ground truth and a report, for one scene or every scene of an index; or render a camera path. The work
// is the Run's (pipeline/run.h); this is the command's flags and their checks before any work.
#include <cstdio>
#include <optional>

#include "app/command_line.h"
#include "app/commands.h"
#include "app/flags.h"
#include "pipeline/model_cache.h"
#include "pipeline/run.h"
#include "pipeline/video_writer.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact::app {

namespace {

struct RenderOptions {
  CommonOptions common;
  OutputOptions out;
  SceneRequest scene;
  std::string path;
  bool lpips_asked = false;  // --lpips given, with or without a file
  bool no_lpips = false;
  std::string lpips_net;  // --lpips-net: alex, vgg (empty: not given)
};

// Which LPIPS weights an evaluation uses: --lpips FILE; --lpips alone or nothing: those `lact model fetch lpips`
// cached. Returns the line said after the report (none with --quiet): that the cached weights were used, or, when
// there are none and --lpips was not given, how to fetch them (after the work, so an error stays one line).
// --lpips-net NET asks for LPIPS with that backbone: the cached weights of `lact model fetch lpips-vgg` (or
// lpips), or --lpips FILE when it holds that backbone's; without it the file's own metadata says which.
std::string choose_lpips(RenderOptions& o) {
  SceneRequest& r = o.scene;
  if (!o.lpips_net.empty() && !o.no_lpips && o.path.empty()) {
    r.lpips = lpips_weights_of_net(*lpips_net_named(o.lpips_net), r.lpips);
    return "";
  }
  if (!r.lpips.empty() || o.no_lpips || !o.path.empty()) return "";
  const std::optional<std::string> cached = cached_lpips_weights();
  if (o.lpips_asked && !cached)
    throw Error("--lpips", "no LPIPS weights are cached: `lact model fetch lpips` fetches them (or --lpips FILE)");
  if (!cached) return "LPIPS not measured: `lact model fetch lpips` fetches its weights (--no-lpips: no such line)";
  r.lpips = *cached;
  r.lpips_by_default = !o.lpips_asked;
  return o.lpips_asked ? "" : "LPIPS measured with the cached weights " + *cached + " (--no-lpips leaves it out)";
}

void run_render(RenderOptions& o, const RunDigest& command_line) {
  SceneRequest& r = o.scene;
  std::string lpips_note;
  Run run(o.common, o.out, command_line, [&](RunOutput& out) {
    out.folder.check_writable();  // before any work; the folder itself is made when the first file is written
    if (o.path.empty() && r.targets.empty())
      throw Error("--targets", "give target views (or --path for a camera path)");
    if (!r.video.empty() && o.path.empty()) throw Error("--video", "needs --path (a camera path to render)");
    if (!r.video.empty()) check_video_output(r.video);  // a known container, ffmpeg and ffprobe: before any work
    if ((!r.lpips.empty() || o.lpips_asked) && !o.path.empty())
      throw Error("--lpips", "measures target views against their ground truth: a camera path (--path) has none");
    if (!o.lpips_net.empty() && !o.path.empty())
      throw Error("--lpips-net", "measures target views against their ground truth: a camera path (--path) has none");
    if (o.lpips_asked && o.no_lpips) throw Error("--no-lpips", "contradicts --lpips");
    if (!o.lpips_net.empty() && o.no_lpips) throw Error("--no-lpips", "contradicts --lpips-net");
    lpips_note = choose_lpips(o);
    for (const std::string& input : {r.model, r.state, o.path, r.data.data, r.lpips}) out.inputs.add(input);
  });
  run.claim_output();
  if (!o.path.empty()) return run.render_path(r, o.path);
  run.write_report(run.evaluate(r));
  if (!lpips_note.empty() && !o.out.quiet && run.leads())
    std::fprintf(stderr, "lact render: %s\n", terminal_text(lpips_note).c_str());
}

}  // namespace

void add_render_command(CLI::App& app) {
  auto o = std::make_shared<RenderOptions>();
  SceneRequest& r = o->scene;
  CLI::App* command = app.add_subcommand(
      "render",
      "Render target views (encoding the inputs first, or from a saved --state) with PSNR/SSIM against their ground "
      "truth, for one scene or every scene of an index; or render a camera path (--path) to frames and a video");
  command
      ->add_option("--model", r.model,
                   "Model weights (.safetensors with the config in its metadata), or a name from lact model fetch")
      ->transform(model_file());
  add_data_options(*command, r.data);
  command->add_option("--state", r.state, "Scene state from `lact encode` (replaces --inputs)");
  command->add_option("--targets", r.targets, "Target views: 3,4 | 8-15 | uniform:N | random:N | fold8 | rest | all");
  command->add_flag("--resume", r.resume,
                    "Finish an interrupted evaluation in --out (same model, state, flags and inputs)");
  CLI::Option* lpips = command->add_option(
      "--lpips", r.lpips,
      "Measure LPIPS (v0.1; the backbone, AlexNet or VGG16, the file's) with these weights (lact model convert "
      "--lpips BACKBONE.pth LINEAR.pth -o FILE); alone, or by default when fetched: those of lact model fetch lpips");
  lpips->expected(0, 1);
  command
      ->add_option("--lpips-net", o->lpips_net,
                   "Measure LPIPS with this backbone: alex (lact model fetch lpips), vgg (lpips-vgg; what LVSM and "
                   "LaCT report); with --lpips FILE, checks the file holds it")
      ->check(CLI::IsMember({"alex", "vgg"}));
  command->add_flag("--no-lpips", o->no_lpips, "Do not measure LPIPS, although its weights are cached");
  command->add_flag("--allow-input-targets", r.allow_input_targets,
                    "Score targets that are also inputs (refused otherwise: a seen view is no novel view)");
  command->add_option("--path", o->path, "Camera path JSON (from `lact path`) to render instead of targets");
  command->add_option("--video", r.video, "With --path: also write this MP4 (needs ffmpeg)");
  command->add_option("--fps", r.fps, "Video frame rate")->capture_default_str()->check(CLI::Range(1, 1000));
  command->add_option("--out", o->out.folder, "Output folder: OUT/<scene>/<view>.png, OUT/report.json, report.csv")
      ->capture_default_str();
  command->add_flag("--save-images", o->out.save_images, "Also write <view>_gt.png and <view>_diff.png (error map)");
  command->add_flag("--save-npy", o->out.save_npy, "Also write <view>.npy (float32 [H, W, 3] in [0, 1])");
  command->add_flag("-q,--quiet", o->out.quiet, "No progress bar");
  command->add_flag("--force", o->out.force,
                    "Replace an existing --video file, or a file lact did not write at a name it writes in --out "
                    "(a view's image, report.json, report.csv); never one of the inputs");
  add_warnings_option(*command, o->out.warnings);
  add_common_options(*command, o->common);
  add_distributed_options(*command, o->common);
  add_time_limit_option(*command, o->common);
  command->callback([o, command, lpips]() {
    o->lpips_asked = lpips->count() > 0;
    run_render(*o, command_line_digest(*command));
  });
}

}  // namespace lact::app
