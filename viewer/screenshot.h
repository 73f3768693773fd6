// Screenshots: for PATH.png the viewer writes
//   PATH.png       the whole window as shown (side panel included), read back from the framebuffer;
//   PATH.view.png  the novel view alone at its render resolution, read back from its texture (the pixels the
//                  window shows, each working-size pixel as a zoom x zoom block, at "view_region");
//   PATH.json      the camera (as a camera path frame), the view region in the window ("view_region": x, y,
//                  width, height in framebuffer pixels from the top left, the integer zoom, and when the ground
//                  truth / error map are shown the step to the next tile), the scene view and its PSNR/SSIM.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "session/typed_outputs.h"
#include "system/output_files.h"
#include "viewer/session_parts.h"
#include "viewer/view_area.h"

namespace lact::viewer {

// The names beside `path`: {png, view png, json}.
using session::screenshot_files;

// Writes the three files (Error naming the one that fails); `info` goes into the JSON with "view_region".
std::vector<std::string> write_screenshot(const std::string& path, const Rgb8& window, const Rgb8& view,
                                          const ViewLayout& layout, nlohmann::json info);

// Before any work: each of the files --screenshot names is refused, as every named output is, when it is one of
// the run's `inputs` (the model, the state, the camera file, an image), or exists and `force` is not given.
void check_screenshot_names(const std::string& path, bool force, const InputFiles& inputs);

// The next free "lact_view_NNN.png" in the working folder.
std::string next_screenshot_name();

}  // namespace lact::viewer
