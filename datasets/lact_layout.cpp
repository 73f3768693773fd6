// The LaCT / LVSM object-and-scene layout (lact_nvs/data.py): an index JSON listing per-scene
// `opencv_cameras.json` files; each is a list of frames {w, h, fx, fy, cx, cy, w2c (4x4 OpenCV
// world-to-camera), file_path (relative to the camera file)}.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "datasets/scene.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string(), "cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string(), std::string("corrupt JSON (") + e.what() + ")");
  }
}

// Inverse of a 4x4 matrix by Gauss-Jordan with partial pivoting; false if singular.
bool invert4(const std::array<double, 16>& m, std::array<double, 16>& inv) {
  double a[4][8];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) a[r][c] = c < 4 ? m[r * 4 + c] : (c - 4 == r ? 1.0 : 0.0);
  for (int col = 0; col < 4; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 4; ++r)
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    if (std::abs(a[pivot][col]) < 1e-12) return false;
    for (int c = 0; c < 8; ++c) std::swap(a[col][c], a[pivot][c]);
    const double d = a[col][col];
    for (int c = 0; c < 8; ++c) a[col][c] /= d;
    for (int r = 0; r < 4; ++r)
      if (r != col) {
        const double f = a[r][col];
        for (int c = 0; c < 8; ++c) a[r][c] -= f * a[col][c];
      }
  }
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) inv[r * 4 + c] = a[r][c + 4];
  return true;
}

double number(const nlohmann::json& frame, const char* key, const std::string& where) {
  if (!frame.contains(key)) throw Error(where, std::string("missing field '") + key + "'");
  const nlohmann::json& v = frame.at(key);
  if (!v.is_number()) throw Error(where, std::string("field '") + key + "' is not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw Error(where, std::string("field '") + key + "' is not finite");
  return x;
}

Scene read_camera_file(const fs::path& path) {
  const nlohmann::json frames = read_json(path);
  if (!frames.is_array())
    throw Error(path.string(), "expected a list of frames {w, h, fx, fy, cx, cy, w2c, file_path}");
  Scene scene;
  scene.source = path.string();
  scene.name = fs::absolute(path).lexically_normal().parent_path().filename().string();
  const fs::path folder = path.parent_path();
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string where = path.string() + " frame " + std::to_string(i);
    const nlohmann::json& f = frames[i];
    if (!f.is_object()) throw Error(where, "frame is not an object");
    SceneView view;
    Camera& cam = view.camera;
    cam.width = static_cast<int>(number(f, "w", where));
    cam.height = static_cast<int>(number(f, "h", where));
    cam.fx = static_cast<float>(number(f, "fx", where));
    cam.fy = static_cast<float>(number(f, "fy", where));
    cam.cx = static_cast<float>(number(f, "cx", where));
    cam.cy = static_cast<float>(number(f, "cy", where));
    if (cam.width <= 0 || cam.height <= 0) throw Error(where, "w and h must be positive");
    if (!f.contains("w2c")) throw Error(where, "missing field 'w2c'");
    const nlohmann::json& m = f.at("w2c");
    std::array<double, 16> w2c{};
    const bool rows_ok = m.is_array() && (m.size() == 4 || m.size() == 3);
    for (size_t r = 0; rows_ok && r < m.size(); ++r) {
      if (!m[r].is_array() || m[r].size() != 4) throw Error(where, "w2c must be a 4x4 (or 3x4) matrix");
      for (int c = 0; c < 4; ++c) {
        if (!m[r][c].is_number()) throw Error(where, "w2c holds a non-number");
        w2c[r * 4 + c] = m[r][c].get<double>();
        if (!std::isfinite(w2c[r * 4 + c])) throw Error(where, "w2c holds NaN or infinity");
      }
    }
    if (!rows_ok) throw Error(where, "w2c must be a 4x4 (or 3x4) matrix");
    if (m.size() == 3) w2c[15] = 1.0;
    if (!invert4(w2c, cam.c2w)) throw Error(where, "w2c is singular");
    if (!f.contains("file_path") || !f.at("file_path").is_string()) throw Error(where, "missing field 'file_path'");
    view.image_path = (folder / f.at("file_path").get<std::string>()).string();
    cam.validate(where);
    scene.views.push_back(std::move(view));
  }
  if (scene.views.empty()) throw Error(path.string(), "the scene has no frames");
  return scene;
}

}  // namespace

std::vector<Scene> read_scenes(const std::string& path_string) {
  fs::path path(path_string);
  if (!fs::exists(path)) throw Error(path_string, "no such file or folder");
  if (fs::is_directory(path)) {
    path /= "opencv_cameras.json";
    if (!fs::exists(path)) throw Error(path_string, "folder holds no opencv_cameras.json");
    return {read_camera_file(path)};
  }
  const nlohmann::json json = read_json(path);
  if (json.is_array() && !json.empty() && json[0].is_string()) {  // an index of camera files
    std::vector<Scene> scenes;
    for (const nlohmann::json& entry : json) {
      if (!entry.is_string()) throw Error(path_string, "index entries must be paths (strings)");
      scenes.push_back(read_camera_file(path.parent_path() / entry.get<std::string>()));
    }
    return scenes;
  }
  if (json.is_array()) return {read_camera_file(path)};
  throw Error(path_string, "not a LaCT index (list of camera files) or camera file (list of frames)");
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
