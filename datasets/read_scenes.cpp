// Layout detection: which reader a path goes to.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/image_format.h"
#include "datasets/json_util.h"
#include "datasets/layouts.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

// transforms.json has camera keys at the top or transform_matrix in its frames; LaCT dicts have w2c frames.
bool is_transforms(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("frames") || !json.at("frames").is_array()) return false;
  for (const char* key : {"camera_angle_x", "fl_x", "applied_transform", "camera_model"})
    if (json.contains(key)) return true;
  bool transform = false, w2c = false;
  for (const nlohmann::json& frame : json.at("frames"))
    if (frame.is_object()) transform |= frame.contains("transform_matrix"), w2c |= frame.contains("w2c");
  return transform && !w2c;
}

Scene layout_from_json(const fs::path& path, const nlohmann::json& json, const ReadOptions& options) {
  if (is_transforms(json)) {
    std::string split;
    const std::string stem = path.stem().string();
    if (stem.rfind("transforms_", 0) == 0) split = stem.substr(11);
    return read_transforms_file(path, json, split, options);
  }
  if (json.is_array() || (json.is_object() && json.contains("frames"))) return read_lact_camera_file(path, json);
  throw Error(path.string(),
              "not a camera file this reader knows (LaCT opencv_cameras.json, nerfstudio "
              "transforms.json, NeRF-synthetic transforms_*.json)");
}

// --downscale N reads the images_N copies a transforms.json's images/ paths (and a COLMAP model's images/) have.
// A view read from anywhere else (a LaCT camera file, NeRF-synthetic, a file_path outside images/) would be read
// at full size with the flag silently ignored: refused, as --images is for a layout that is not COLMAP.
void check_downscale_used(const Scene& scene, int downscale) {
  if (downscale <= 1) return;
  for (const SceneView& v : scene.views)
    if (!v.pixels && v.downscale != downscale)
      throw Error("--downscale", std::to_string(downscale) + ": " + scene.source + " reads " + v.image_path +
                                     ", which is not under images/, so there is no images_" +
                                     std::to_string(downscale) +
                                     " copy to read (--downscale is for nerfstudio/DL3DV transforms.json and COLMAP): "
                                     "leave it out");
}

Scene scene_from_json(const fs::path& path, const nlohmann::json& json, const ReadOptions& options) {
  Scene scene = layout_from_json(path, json, options);
  check_downscale_used(scene, options.downscale);
  return scene;
}

Scene read_camera_file(const fs::path& path, const ReadOptions& options) {
  if (is_colmap_path(path)) return read_colmap_scene(path, options);  // an index entry naming a COLMAP model
  return scene_from_json(path, read_json_file(path), options);
}

// --images names the image folder of a COLMAP model; any other layout states its image paths itself.
void check_images_option(const std::string& path, const ReadOptions& options) {
  if (!options.images.empty() && !is_colmap_path(path))
    throw Error("--images",
                "applies to COLMAP models only; " + path + " is not one (its camera file names its images)");
}

// Index files list per-scene camera files relative to the index's folder (absolute paths stay).
std::vector<fs::path> read_index(const fs::path& path, const nlohmann::json* json) {
  std::vector<fs::path> entries;
  auto add = [&](const std::string& entry) {
    check_no_nul(entry, path.string(), "index entry '" + entry.substr(0, entry.find('\0')) + "'");
    const fs::path p(entry);
    entries.push_back(p.is_absolute() ? p : path.parent_path() / p);
  };
  if (json) {
    for (const nlohmann::json& entry : *json) {
      if (!entry.is_string()) throw Error(path.string(), "index entries must be paths (strings)");
      add(entry.get<std::string>());
    }
  } else {
    std::istringstream in(read_whole_file(path.string(), uint64_t{1} << 28));
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      if (!line.empty() && line[0] != '#') add(line);
    }
  }
  if (entries.empty()) throw Error(path.string(), "the index lists no scenes");
  return entries;
}

}  // namespace

namespace {
// An image given where scene data (cameras) is expected: named as such, not as a JSON parse error.
void refuse_image_as_data(const std::string& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) return;  // a FIFO would block; the JSON reader names the rest
  std::ifstream file(path, std::ios::binary);
  uint8_t head[16] = {};
  file.read(reinterpret_cast<char*>(head), sizeof head);
  const SniffedFormat sniffed = sniff_image_format(head, static_cast<size_t>(file.gcount()));
  if (!sniffed.name.empty())
    throw Error(path, "is an image (" + sniffed.name +
                          "), not scene data: give its cameras (opencv_cameras.json, transforms.json, a COLMAP "
                          "model, or a folder holding one), or make them from photos with lact import");
}
// Whether `path` is there; a name that is a dangling link or a loop of links (ELOOP) is named as that, not as
// missing (a loop of links named opencv_cameras.json was "no such file", or a folder "holding no" camera file).
bool present(const fs::path& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return true;
  if (ec == std::errc::too_many_symbolic_link_levels) throw Error(path.string(), "is a loop of symbolic links");
  if (ec) throw Error(path.string(), "cannot be read (" + ec.message() + ")");
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    throw Error(path.string(), "is a link to a missing file or folder (" + fs::read_symlink(path, ec).string() + ")");
  return false;
}

}  // namespace

SceneList read_scene_list(const std::string& path_string, const ReadOptions& options) {
  const fs::path path(path_string);
  std::error_code ec;
  if (!present(path)) throw Error(path_string, "no such file or folder");
  check_images_option(path_string, options);
  if (fs::is_directory(path, ec)) {
    for (const char* name : {"opencv_cameras.json", "transforms.json"})
      if (present(path / name)) return {{read_camera_file(path / name, options)}, {}};
    if (is_colmap_path(path)) return {{read_colmap_scene(path, options)}, {}};
    // NeRF-synthetic: one scene from the splits present, in the order train, val, test.
    Scene scene;
    for (const char* split : {"train", "val", "test"}) {
      const fs::path file = path / (std::string("transforms_") + split + ".json");
      if (!present(file)) continue;
      Scene part = read_camera_file(file, options);
      if (scene.views.empty())
        scene = std::move(part), scene.source = path.string();
      else
        scene.views.insert(scene.views.end(), part.views.begin(), part.views.end());
    }
    if (scene.views.empty())
      throw Error(path_string,
                  "folder holds no opencv_cameras.json, transforms.json, transforms_{train,val,test}.json "
                  "or COLMAP model (cameras + images .bin or .txt, or sparse/0)" +
                      other_sparse_model(path));
    return {{scene}, {}};
  }
  if (is_colmap_path(path)) return {{read_colmap_scene(path, options)}, {}};  // cameras.bin, images.txt, ...
  auto read_all = [&](const std::vector<fs::path>& entries) {
    SceneList list;
    for (const fs::path& entry : entries) {
      try {
        list.scenes.push_back(read_camera_file(entry, options));
      } catch (const Error& e) {
        list.failed.push_back({entry.string(), e.what()});
      }
    }
    return list;
  };
  if (path.extension() == ".txt") return read_all(read_index(path, nullptr));
  refuse_image_as_data(path_string);
  const nlohmann::json json = read_json_file(path);
  if (json.is_array() && !json.empty() && json[0].is_string()) return read_all(read_index(path, &json));
  return {{scene_from_json(path, json, options)}, {}};
}

std::vector<Scene> read_scenes(const std::string& path, const ReadOptions& options) {
  SceneList list = read_scene_list(path, options);
  if (!list.failed.empty()) throw Error(list.failed[0].second);
  return std::move(list.scenes);
}

const Scene& select_scene(const std::vector<Scene>& scenes, const std::string& name, const std::string& where) {
  if (name.empty()) {
    if (scenes.size() == 1) return scenes[0];
    std::string names;
    for (const Scene& s : scenes) names += (names.empty() ? "" : ", ") + s.name;
    throw Error(where, "holds " + std::to_string(scenes.size()) + " scenes; pick one with --scene (" + names + ")");
  }
  for (const Scene& s : scenes)
    if (s.name == name) return s;
  throw Error(where, "has no scene named '" + name + "'");
}

}  // namespace lact
