// lact view: the real-time viewer (viewer/). Encodes a scene (or opens an encoded state) and renders the novel
// view for an interactive camera; a scripted mode runs it for tests and benchmarks. When the viewer is not
// built (no GLFW / Dear ImGui / glad at configure time) the command still exists and says what is missing.
#include "app/commands.h"
#include "app/flags.h"
#include "system/error.h"

#ifdef LACT_WITH_VIEWER
#include "viewer/options.h"
#endif

namespace lact::app {

#ifdef LACT_WITH_VIEWER

void add_view_command(CLI::App& app) {
  auto o = std::make_shared<viewer::ViewerOptions>();
  CLI::App* command = app.add_subcommand(
      "view",
      "Real-time viewer: encode the input views (or open a saved --state), then orbit, pan, zoom and fly through the "
      "scene with novel views rendered as the camera moves; PSNR/SSIM on test views, screenshots, camera paths");
  add_scene_source_options(*command, *o);
  command->add_option("--window", o->window, "Window size HxW in screen units (like --size; N: NxN)")
      ->capture_default_str();
  command->add_option("--scale", o->scale, "Render resolution scale in (0, 1]")->capture_default_str();
  command->add_flag("--adaptive", o->adaptive, "Render at --moving-scale while the camera moves");
  command->add_option("--moving-scale", o->moving_scale, "Resolution scale while moving (with --adaptive)")
      ->capture_default_str();
  command->add_flag("--no-vsync", o->no_vsync, "Start with VSync off");
  command->add_flag("--show-gt", o->show_truth, "Show the ground truth beside the view (on a test view)");
  command->add_flag("--show-error", o->show_error, "Show the error map beside the view (on a test view)");
  command->add_flag("--frustums", o->show_frustums, "Draw the input and test cameras as pyramids over the view");
  command->add_option("--frames", o->frames, "Scripted: run this many frames once the first view is shown")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option(
          "--orbit-frames", o->orbit_frames,
          "Scripted: a measured orbit about the scene's up axis over this many frames (one new camera per frame)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--orbit-degrees", o->orbit_degrees, "Scripted: how far the orbit turns")->capture_default_str();
  command->add_option("--screenshot", o->screenshot,
                      "Scripted: at the end write this PNG (the window), .view.png (the novel view at its render "
                      "resolution) and .json (camera, view region, PSNR/SSIM)");
  command->add_flag("--force", o->force,
                    "Replace existing files: --screenshot's and those named in the window (never one of the inputs)");
  command->add_flag("--exit", o->exit, "Scripted: exit when the script ends");
  command->add_flag("--print-stats", o->print_stats,
                    "Scripted: print FPS, novel views/s, render ms, PSNR and SSIM as 'key value' lines");
  add_common_options(*command, o->common);
  command->callback([o]() { viewer::run_viewer(*o); });
}

#else

void add_view_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("view", "Real-time viewer (not built: " LACT_VIEWER_MISSING ")");
  command->allow_extras();
  command->callback([]() { throw Error("the viewer is not built (" LACT_VIEWER_MISSING ")"); });
}

#endif

}  // namespace lact::app
