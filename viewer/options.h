// What `lact view` is asked to do: the scene (as render's flags), the window, and the scripted mode for tests.
#pragma once

#include <string>

#include "session/scene_options.h"

namespace lact::viewer {

// The scene, the test views ([ ] snaps through inputs and these), --camera and --render-threads are the
// session's (session/scene_options.h).
struct ViewerOptions : session::SceneOptions {
  std::string window = "800x1280";  // HxW in screen units, like every size flag
  double scale = 1.0;               // render resolution scale
  bool adaptive = false;            // lower resolution while the camera moves
  double moving_scale = 0.5;
  bool no_vsync = false;
  bool show_truth = false, show_error = false;
  bool show_frustums = false;  // the scene's cameras drawn as pyramids

  // Scripted mode (tests, benchmarks, screenshots); starts snapped on SceneOptions::camera.
  int frames = 0;              // UI frames to run once the first novel view is shown
  int orbit_frames = 0;        // a scripted orbit over this many UI frames (one new camera each), measured
  double orbit_degrees = 360;  // how far it turns about the scene's up axis
  std::string screenshot;      // at the end: this PNG (the window), .view.png (the novel view), .json (pose)
  bool force = false;          // --screenshot and names typed in the window may replace files (never an input)
  bool exit = false;           // exit after the script
  bool print_stats = false;    // print the counters (and PSNR/SSIM) to stdout at the end of the script

  bool scripted() const { return camera >= 0 || frames > 0 || orbit_frames > 0 || !screenshot.empty() || exit; }
};

// Runs the viewer until the window closes (or the script ends with --exit). Errors before the window opens
// (bad flags, data, model) throw lact::Error; in a scripted run so do errors after it (exit code 1).
void run_viewer(const ViewerOptions& options);

}  // namespace lact::viewer
