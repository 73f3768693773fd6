#include "viewer/panels.h"

#include <imgui.h>
#include <imgui_internal.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace lact::viewer {

namespace {
const ImGuiTreeNodeFlags kOpen = ImGuiTreeNodeFlags_DefaultOpen;

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }
}  // namespace

float begin_side_panel(float width) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(ImVec2(width, viewport->WorkSize.y));
  ImGui::Begin("lact view", nullptr,
               ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                   ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  ImGui::PushItemWidth(-110);
  return width;
}

PanelFit end_side_panel() {
  ImGui::PopItemWidth();
  const ImGuiWindow* window = ImGui::GetCurrentWindow();
  const ImVec2 start = window->DC.CursorStartPos, reached = window->DC.CursorMaxPos;
  PanelFit fit;
  fit.content_width = reached.x - start.x, fit.content_height = reached.y - start.y;
  fit.width = window->WorkRect.Max.x - start.x;
  fit.height = window->InnerRect.GetHeight() - 2 * window->WindowPadding.y;
  fit.scrollbar = window->ScrollbarY;
  ImGui::End();
  return fit;
}

void performance_section(const PerformanceReadout& r) {
  if (!ImGui::CollapsingHeader("Performance", kOpen)) return;
  ImGui::Text("UI     %6.1f fps  %6.2f ms/frame", r.fps, r.frame_ms);
  ImGui::TextWrapped("views %.1f /s, render %.1f ms, last %.1f ms", r.views_per_second, r.render_ms,
                     r.last_render_ms);  // one line, two where slow renders' numbers are long
  char threads[32];
  if (r.render_threads > 0)
    std::snprintf(threads, sizeof(threads), "%d thread%s", r.render_threads, r.render_threads == 1 ? "" : "s");
  else
    std::snprintf(threads, sizeof(threads), "all cores");
  if (r.render_width > 0)
    ImGui::Text("size %dx%d, %s, upload %.3f ms", r.render_height, r.render_width, threads, r.upload_ms);
  else
    ImGui::TextDisabled("size -, %s", threads);
  // Always one line, so the panel does not jump under the mouse.
  ImGui::TextDisabled(r.idle ? "idle: redraws on input and results" : "drawing continuously");
}

void scene_section(const SceneReadout& r) {
  if (!ImGui::CollapsingHeader("Scene", kOpen)) return;
  const SceneSource& s = *r.source;
  const ModelConfig& config = s.model->config();
  // Names of any length wrap (a long one breaks inside the word) rather than run past the panel's edge.
  ImGui::TextWrapped("model %s", file_name(s.model_path).c_str());
  ImGui::Text("%d layers, dim %d, patch %d, %.1fM params", config.layers, config.dim, config.patch_size,
              s.model->weights().parameter_count / 1e6);
  if (!s.state_path.empty()) ImGui::TextWrapped("state %s", file_name(s.state_path).c_str());
  ImGui::TextWrapped("scene %s: %d views, %zu inputs, %zu test", s.selection.scene.name.c_str(), s.views(),
                     s.selection.inputs.size(), s.targets.size());
  ImGui::Text("working size %dx%d", s.height, s.width);
  // The guard rails, wrapped to the panel: what lact render would warn about this run.
  for (const std::string& warning : s.warnings) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.2f, 1.0f));
    ImGui::TextWrapped("warning: %s", warning.c_str());
    ImGui::PopStyleColor();
  }
  if (r.ready)
    ImGui::Text("%s in %.3f s", s.state_path.empty() ? "encoded" : "loaded", r.encode_seconds);
  else
    ImGui::TextDisabled("%s", r.status.c_str());
}

void camera_section(CameraController& camera, DisplaySettings& display, const SceneSource& source,
                    PanelActions& actions) {
  if (!ImGui::CollapsingHeader("Camera", kOpen)) return;
  const int view = camera.snapped_view();
  if (view >= 0)
    ImGui::Text("on view %d (%s)", view, source.role(view));
  else
    ImGui::TextDisabled("free camera");
  if (ImGui::Button("[ prev")) actions.snap_previous = true;
  ImGui::SameLine();
  if (ImGui::Button("next ]")) actions.snap_next = true;
  ImGui::SameLine();
  if (ImGui::Button("reset (R)")) actions.reset = true;
  ImGui::SameLine();
  ImGui::Checkbox("fly (F)", &display.fly);
  float hfov = static_cast<float>(camera.hfov());
  if (ImGui::SliderFloat("FoV (deg)", &hfov, 10.0f, 120.0f, "%.1f")) camera.set_hfov(hfov);
  float speed = static_cast<float>(camera.speed);
  if (ImGui::DragFloat("speed", &speed, 0.01f * static_cast<float>(camera.frame().scale), 1e-4f, 1e4f, "%.3f /s"))
    camera.speed = std::max(1e-6f, speed);
  const auto& m = camera.camera().c2w;
  ImGui::TextDisabled("at (%.3f, %.3f, %.3f)  d %.3f", m[3], m[7], m[11], camera.distance());
}

// The error map's colour scale (core/metrics.h's error_heat_map: black, red, yellow, white at a mean absolute
// error of 0.25), as *_diff.png shows it under the map.
void error_scale_bar() {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x, height = 10;
  const ImU32 stops[4] = {IM_COL32(0, 0, 0, 255), IM_COL32(255, 0, 0, 255), IM_COL32(255, 255, 0, 255),
                          IM_COL32(255, 255, 255, 255)};
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int i = 0; i < 3; ++i) {
    const float x0 = at.x + width * i / 3, x1 = at.x + width * (i + 1) / 3;
    draw->AddRectFilledMultiColor(ImVec2(x0, at.y), ImVec2(x1, at.y + height), stops[i], stops[i + 1], stops[i + 1],
                                  stops[i]);
  }
  ImGui::Dummy(ImVec2(width, height));
  // The labels under the bar's start, middle and end, the last ending at the bar's right edge.
  ImGui::TextDisabled("0");
  ImGui::SameLine((width - ImGui::CalcTextSize("0.125").x) / 2);
  ImGui::TextDisabled("0.125");
  ImGui::SameLine(width - ImGui::CalcTextSize("0.25").x);
  ImGui::TextDisabled("0.25");
  ImGui::TextDisabled("mean |error| over R, G, B");
}

void quality_section(const RenderedView* shown, const SceneSource& source, DisplaySettings& display) {
  if (!ImGui::CollapsingHeader("Quality", kOpen)) return;
  if (shown && shown->measured) {
    const int view = shown->request.view;
    ImGui::Text("view %d (%s) vs its ground truth", view, source.role(view));
    // The scores on one line (LPIPS, lower is closer, with LPIPS weights only), so that the panel fits.
    if (shown->lpips)
      ImGui::TextWrapped("PSNR %.3f dB  SSIM %.4f  LPIPS %.4f", shown->psnr, shown->ssim, *shown->lpips);
    else
      ImGui::TextWrapped("PSNR %.3f dB  SSIM %.4f", shown->psnr, shown->ssim);
    if (shown->nearest_input >= 0 && shown->lpips_nearest_input)
      ImGui::TextWrapped("nearest input %d: %.3f dB, LPIPS %.4f", shown->nearest_input, shown->psnr_nearest_input,
                         *shown->lpips_nearest_input);
    else if (shown->nearest_input >= 0)
      ImGui::Text("nearest input %d: %.3f dB", shown->nearest_input, shown->psnr_nearest_input);
  } else if (shown && shown->request.view >= 0) {
    ImGui::TextDisabled("measured at resolution scale 1 only");
  } else {
    ImGui::TextDisabled("snap to a test view ([ ]) for PSNR / SSIM");
  }
  ImGui::Checkbox("ground truth (G)", &display.show_truth);
  ImGui::SameLine();
  ImGui::Checkbox("error map (X)", &display.show_error);
  if (display.show_error) error_scale_bar();
}

void display_section(DisplaySettings& display, PanelActions& actions) {
  // Closed at first, as Screenshot and Camera path: every section open would not fit the default window.
  if (!ImGui::CollapsingHeader("Display")) return;
  ImGui::SliderFloat("resolution", &display.scale, 0.125f, 1.0f, "x %.3f");
  ImGui::Checkbox("adaptive while moving", &display.adaptive);
  if (display.adaptive) ImGui::SliderFloat("moving", &display.moving_scale, 0.125f, 1.0f, "x %.3f");
  if (ImGui::Checkbox("VSync", &display.vsync)) actions.vsync_changed = true;
  ImGui::Checkbox("camera frustums", &display.show_frustums);
  if (display.show_frustums) ImGui::TextDisabled("inputs orange, test views cyan");
}

void screenshot_section(std::string& path, const std::string& last_saved, PanelActions& actions) {
  if (!ImGui::CollapsingHeader("Screenshot")) return;
  ImGui::PushItemWidth(-100);
  ImGui::InputText("##screenshot", &path);
  ImGui::PopItemWidth();
  ImGui::SameLine();
  if (ImGui::Button("save (F12)")) actions.screenshot = true;
  if (last_saved.empty())
    ImGui::TextDisabled("writes the window, .view.png and .json");
  else
    ImGui::TextDisabled("saved %s (+ .view.png, .json)", file_name(last_saved).c_str());
}

void help_section() {
  if (!ImGui::CollapsingHeader("Controls", kOpen)) return;  // open on first start: the keys are not obvious
  ImGui::TextUnformatted(
      "left drag  orbit (fly: look)\n"
      "middle or shift drag  pan    wheel  dolly\n"
      "W A S D Q E  move (shift 4x)   = -  speed\n"
      "[ ]  prev/next camera   R reset   F fly\n"
      "K keyframe  P play path  F12 screenshot\n"
      "G truth  X error map  Esc quit (Q: not flying)");
}

void encode_overlay(float x, float y, float width, float height, const std::string& stage, double fraction,
                    double seconds) {
  ImGui::SetNextWindowPos(ImVec2(x + width / 2, y + height / 2), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(std::min(420.0f, width - 20), 0));
  ImGui::Begin("Encoding", nullptr,
               ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                   ImGuiWindowFlags_NoSavedSettings);
  ImGui::TextUnformatted(stage.c_str());
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  ImGui::ProgressBar(static_cast<float>(fraction), ImVec2(-1, 0), text);
  ImGui::End();
}

}  // namespace lact::viewer
