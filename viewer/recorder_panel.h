// The side panel's camera path section: keyframes, playback, save / load (the camera path JSON of
// datasets/camera_path_io.h) and export through the Run, as `lact render --path` renders (Run::export_path).
#pragma once

#include <string>

#include "viewer/session_parts.h"

namespace lact::viewer {

struct RecorderSettings {
  std::string file = "camera_path.json";
  std::string export_folder = "viewer_path";
  bool video = false;
  int fps = 30;
  bool loop = false;
  std::string status;  // the last save / load / export outcome
  bool exporting = false;
};

struct RecorderActions {
  bool add_key = false, play = false, stop = false, save = false, load = false, export_path = false;
};

RecorderActions recorder_section(PathRecorder& recorder, RecorderSettings& settings);

}  // namespace lact::viewer
