#include "viewer/screenshot.h"

#include <cstdio>
#include <filesystem>

#include "system/error.h"
#include "system/file_io.h"

namespace lact::viewer {

namespace fs = std::filesystem;

std::vector<std::string> write_screenshot(const std::string& path, const Rgb8& window, const Rgb8& view,
                                          const ViewLayout& layout, nlohmann::json info) {
  const std::vector<std::string> files = screenshot_files(path);
  const fs::path folder = fs::path(files[0]).parent_path();
  std::error_code ec;
  if (!folder.empty()) fs::create_directories(folder, ec);
  write_png(files[0], window);
  if (!view.empty()) write_png(files[1], view);
  info["window"] = fs::path(files[0]).filename().string();
  info["window_size"] = {window.width, window.height};
  if (!view.empty()) info["view_image"] = fs::path(files[1]).filename().string();
  info["view_region"] = {{"x", layout.x},
                         {"y", layout.y},
                         {"width", layout.width},
                         {"height", layout.height},
                         {"zoom", layout.zoom},
                         {"tiles", layout.tiles},
                         {"tile_step", layout.step},
                         {"framebuffer_scale", layout.framebuffer_scale}};
  write_file_atomically(files[2], info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return files;
}

void check_screenshot_names(const std::string& path, bool force, const InputFiles& inputs) {
  session::check_screenshot_name(path, "--screenshot");
  for (const std::string& file : screenshot_files(path)) check_named_output(file, "--screenshot", force, inputs, true);
}

std::string next_screenshot_name() {
  for (int i = 0; i < 10000; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "lact_view_%03d.png", i);
    if (!fs::exists(name)) return name;
  }
  return "lact_view.png";
}

}  // namespace lact::viewer
