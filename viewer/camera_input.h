// Mouse and keyboard to camera moves and viewer shortcuts. Nothing happens while an ImGui widget has the
// mouse or the keyboard (io.WantCaptureMouse / WantCaptureKeyboard).
//   left drag: orbit (fly mode: look around)      middle drag or shift + left drag: pan     wheel: dolly
//   W A S D: forward, left, back, right   Q E: down, up (scene up)   shift: 4x   = -: speed up, down
//   [ ]: previous / next input or test camera   R: reset   F: fly mode   F12: screenshot
//   K: add a keyframe   P: play / stop the path   G: ground truth   X: error map
#pragma once

#include <vector>

#include "viewer/session_parts.h"
#include "viewer/window.h"

namespace lact::viewer {

struct InputActions {
  bool snap_previous = false, snap_next = false, reset = false, screenshot = false;
  bool add_key = false, toggle_play = false, toggle_fly = false, toggle_truth = false, toggle_error = false;
  bool camera_moving = false;  // a drag or a movement key is active
  bool quit = false;           // Esc, or Q outside fly mode (where Q moves down)
  // Enter or Esc, also while an ImGui widget has the keyboard (the error popup's: it closes its message).
  bool dismiss = false;
};

// `zoom`: screen (ImGui) units per working-size pixel of the displayed view; `seconds`: the frame time;
// `presses`: the keys pressed since the last frame (shortcuts). With `move` false (a path plays, the script
// drives) the camera is left alone and only the shortcuts count.
InputActions apply_camera_input(CameraController& camera, bool fly, double zoom, double seconds,
                                const std::vector<Window::KeyPress>& presses, bool move);

}  // namespace lact::viewer
