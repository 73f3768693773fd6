// The side panel's sections (Dear ImGui): performance, scene, camera, quality, display, screenshot, help.
// They show state and edit settings; anything with side effects comes back as an action for the viewer loop.
#pragma once

#include <string>

#include "viewer/session_parts.h"

namespace lact::viewer {

// What the display and camera sections edit.
struct DisplaySettings {
  float scale = 1;            // render resolution scale
  bool adaptive = false;      // lower while the camera moves
  float moving_scale = 0.5f;  // the scale while moving
  bool vsync = true;
  bool show_truth = false, show_error = false;
  bool show_frustums = false;  // the scene's cameras as pyramids over the view
  bool fly = false;
};

struct PanelActions {
  bool snap_previous = false, snap_next = false, reset = false, screenshot = false, vsync_changed = false;
};

// A fixed window along the left edge; returns its width (ImGui units).
float begin_side_panel(float width);
// How the panel's content fits it (ImGui units, inside the padding and any scrollbar): the widest item and the
// height of all sections against the room the window gives them. Text wider than the room is clipped; taller
// content needs the scrollbar.
struct PanelFit {
  float content_width = 0, width = 0, content_height = 0, height = 0;
  bool scrollbar = false;  // ImGui showed the vertical scrollbar (it decides from the frame before)
};
PanelFit end_side_panel();

struct PerformanceReadout {
  double fps, frame_ms, render_ms, last_render_ms, upload_ms, views_per_second;
  int render_width, render_height;  // of the view on screen
  int render_threads;               // 0: all cores
  bool idle;                        // the UI is waiting for input (it redraws on events only)
};
void performance_section(const PerformanceReadout& readout);

struct SceneReadout {
  const SceneSource* source;
  bool ready;
  double encode_seconds;
  std::string status;  // the encode job's stage while not ready
};
void scene_section(const SceneReadout& readout);

void camera_section(CameraController& camera, DisplaySettings& display, const SceneSource& source,
                    PanelActions& actions);
// `shown`: the view on screen (null before the first).
void quality_section(const RenderedView* shown, const SceneSource& source, DisplaySettings& display);
void display_section(DisplaySettings& display, PanelActions& actions);
void screenshot_section(std::string& path, const std::string& last_saved, PanelActions& actions);
void help_section();

// A progress box over the view area while the scene encodes.
void encode_overlay(float x, float y, float width, float height, const std::string& stage, double fraction,
                    double seconds);

}  // namespace lact::viewer
