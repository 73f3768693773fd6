// The LaCT / LVSM / Long-LRM family (lact_nvs/data.py, LVSM process_data.py, Long-LRM's DL3DV converter):
// per-scene camera files whose frames hold an OpenCV world-to-camera `w2c` and pixel intrinsics, as
//   - a list of {w, h, fx, fy, cx, cy, w2c, file_path (relative to the camera file)} (LaCT),
//   - a dict {scene_name, frames: [same], fold_8_kmeans_N_input: [...]} (Long-LRM, converted DL3DV),
//   - frames {image_path (absolute or relative), fxfycxcy: [4], w2c} (LVSM).
#include <cmath>
#include <filesystem>
#include <set>

#include "datasets/image_io.h"
#include "datasets/json_util.h"
#include "datasets/layouts.h"
#include "system/error.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

SceneView read_frame(const nlohmann::json& f, const fs::path& folder, const std::string& where) {
  if (!f.is_object()) throw Error(where, "frame is not an object");
  SceneView view;
  Camera& cam = view.camera;
  const bool lvsm = f.contains("fxfycxcy");
  const std::string file =
      lvsm && f.contains("image_path") ? json_string(f, "image_path", where) : json_string(f, "file_path", where);
  view.image_path = fs::path(file).is_absolute() ? file : (folder / file).string();
  if (lvsm) {
    const nlohmann::json& k = f.at("fxfycxcy");
    if (!k.is_array() || k.size() != 4) throw Error(where, "field 'fxfycxcy' must hold 4 numbers");
    double values[4];
    for (int i = 0; i < 4; ++i) {
      if (!k[i].is_number() || !std::isfinite(k[i].get<double>()))
        throw Error(where, "field 'fxfycxcy' holds a non-number");
      values[i] = k[i].get<double>();
    }
    set_intrinsics(cam, values[0], values[1], values[2], values[3], where);
  } else {
    set_intrinsics(cam, json_number(f, "fx", where), json_number(f, "fy", where), json_number(f, "cx", where),
                   json_number(f, "cy", where), where);
  }
  if (f.contains("w") || f.contains("h")) {  // stated: both, as integers (a boolean is not a size)
    cam.width = json_int(f, "w", where, 1, kMaxImageSide);
    cam.height = json_int(f, "h", where, 1, kMaxImageSide);
  } else if (!read_image_size(view.image_path, cam.width, cam.height)) {
    throw Error(where, "no 'w'/'h' and the image " + view.image_path + " cannot be read for its size");
  }
  const auto w2c = json_matrix4(f, "w2c", where);
  check_rigid_pose(w2c, where, "field 'w2c'");
  cam.c2w = invert_rigid_pose(w2c);
  cam.validate(where);
  return view;
}

// The k-means input list: view indices in range, each once (a view listed twice would be encoded twice, as
// --inputs 0,0 would, and weigh double in the state).
void read_kmeans_inputs(const nlohmann::json& list, const std::string& path, Scene& scene) {
  const std::string what = "field '" + scene.kmeans_key + "'";
  std::set<int> seen;
  for (const nlohmann::json& v : list) {
    const int view = json_index(v, static_cast<int>(scene.views.size()), path, what);
    if (!seen.insert(view).second)
      throw Error(path, what + " lists view " + std::to_string(view) + " twice (each input view once)");
    scene.kmeans_inputs.push_back(view);
  }
}

}  // namespace

Scene read_lact_camera_file(const fs::path& path, const nlohmann::json& json) {
  Scene scene;
  scene.source = path.string();
  scene.name = fs::absolute(path).lexically_normal().parent_path().filename().string();
  const nlohmann::json* frames = &json;
  const nlohmann::json* kmeans = nullptr;  // the k-means list, checked once the frames are counted
  scene.layout = "lact";
  if (json.is_object()) {
    if (!json.contains("frames") || !json.at("frames").is_array())
      throw Error(path.string(), "expected a list of frames or an object with 'frames'");
    frames = &json.at("frames");
    scene.layout = "lact-dict";
    if (json.contains("scene_name") && json.at("scene_name").is_string() &&
        !json.at("scene_name").get<std::string>().empty())
      scene.name = json_string(json, "scene_name", path.string());
    // Long-LRM's precomputed k-means inputs: prefer the largest list the file has.
    for (auto it = json.begin(); it != json.end(); ++it) {
      const std::string& key = it.key();
      if (key.rfind("fold_8_kmeans_", 0) != 0 || key.size() < 7 || key.compare(key.size() - 6, 6, "_input") != 0)
        continue;
      if (!it->is_array()) throw Error(path.string(), "field '" + key + "' must be a list of view indices");
      if (it->size() > (kmeans ? kmeans->size() : 0)) kmeans = &*it, scene.kmeans_key = key;
    }
  }
  const fs::path folder = path.parent_path();
  for (size_t i = 0; i < frames->size(); ++i) {
    const std::string where = path.string() + " frame " + std::to_string(i);
    SceneView view = read_frame((*frames)[i], folder, where);
    if ((*frames)[i].contains("fxfycxcy")) scene.layout = "lvsm";
    scene.views.push_back(std::move(view));
  }
  if (scene.views.empty()) throw Error(path.string(), "the scene has no frames");
  if (kmeans) read_kmeans_inputs(*kmeans, path.string(), scene);
  return scene;
}

}  // namespace lact
