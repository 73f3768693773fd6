#include "viewer/recorder_panel.h"

#include <imgui.h>
#include <imgui_stdlib.h>

namespace lact::viewer {

RecorderActions recorder_section(PathRecorder& recorder, RecorderSettings& s) {
  RecorderActions a;
  if (!ImGui::CollapsingHeader("Camera path")) return a;
  const int keys = static_cast<int>(recorder.keys().size());
  ImGui::Text("%d keyframes, %zu frames", keys, recorder.frame_count());
  if (ImGui::Button("add key (K)")) a.add_key = true;
  ImGui::SameLine();
  if (ImGui::Button("remove last")) recorder.remove_last();
  ImGui::SameLine();
  if (ImGui::Button("clear")) recorder.clear();
  ImGui::SliderInt("frames/segment", &recorder.frames_per_segment, 1, 240);
  ImGui::SliderInt("fps", &s.fps, 1, 60);
  if (recorder.playing()) {
    if (ImGui::Button("stop (P)")) a.stop = true;
    ImGui::SameLine();
    ImGui::Text("frame %d / %d", recorder.playing_frame() + 1, recorder.playing_frames());
  } else {
    ImGui::BeginDisabled(keys == 0);
    if (ImGui::Button("play (P)")) a.play = true;
    ImGui::EndDisabled();
  }
  ImGui::SameLine();
  ImGui::Checkbox("loop", &s.loop);

  ImGui::InputText("path file", &s.file);
  ImGui::BeginDisabled(keys == 0);
  if (ImGui::Button("save")) a.save = true;
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("load")) a.load = true;

  ImGui::InputText("export to", &s.export_folder);
  ImGui::Checkbox("MP4 video (ffmpeg)", &s.video);
  ImGui::BeginDisabled(keys == 0 || s.exporting);
  if (ImGui::Button(s.exporting ? "exporting..." : "export frames")) a.export_path = true;
  ImGui::EndDisabled();
  if (!s.status.empty()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("%s", s.status.c_str());
    ImGui::PopTextWrapPos();
  }
  return a;
}

}  // namespace lact::viewer
