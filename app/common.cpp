#include "app/common.h"

#include <sstream>

#include "core/error.h"

namespace lact::app {

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_option("--threads", options.threads, "Worker threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  command.add_option("--backend", options.backend, "Compute backend")->check(CLI::IsMember({"cpu"}));
}

std::unique_ptr<Backend> make_backend(const CommonOptions& options) {
  return lact::make_backend(options.backend, options.threads);
}

std::vector<int> parse_indices(const std::string& text, int count, const std::string& where, const std::string& flag) {
  std::vector<int> indices;
  std::stringstream stream(text);
  std::string item;
  auto to_int = [&](const std::string& s) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty()) throw Error(flag, "'" + text + "' is not a list of view indices like 0,1,2 or 0-3");
    return value;
  };
  while (std::getline(stream, item, ',')) {
    const size_t dash = item.find('-', 1);
    const int first = to_int(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : to_int(item.substr(dash + 1));
    for (int i = first; i <= last; ++i) {
      if (i < 0 || i >= count)
        throw Error(where, "view index " + std::to_string(i) + " (" + flag + ") is out of range: the scene has " +
                               std::to_string(count) + " views");
      indices.push_back(i);
    }
  }
  if (indices.empty()) throw Error(flag, "no view indices given");
  return indices;
}

std::pair<int, int> parse_size(const std::string& text) {
  if (text.empty()) return {0, 0};
  int h = 0, w = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &h, &x, &w, &extra) != 3 || (x != 'x' && x != 'X') || h <= 0 || w <= 0)
    throw Error("--size", "'" + text + "' is not a size like 256x256 (height x width)");
  return {h, w};
}

std::vector<PosedImage> load_views(const Scene& scene, const std::vector<int>& indices, std::pair<int, int> size,
                                   bool with_images) {
  if (size.first == 0) size = {scene.views[indices[0]].camera.height, scene.views[indices[0]].camera.width};
  LoadOptions options;
  options.height = size.first;
  options.width = size.second;
  std::vector<PosedImage> views;
  for (int i : indices) {
    const SceneView& v = scene.views[i];
    PosedImage p;
    if (with_images) {
      p.camera = v.camera;
      p.image = load_view_image(v.image_path, p.camera, options);
    } else {
      p.camera = cover_crop(v.camera, size.first, size.second).camera;
    }
    views.push_back(std::move(p));
  }
  return views;
}

}  // namespace lact::app
