#include "datasets/camera_path_io.h"

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/json_util.h"

namespace lact {

nlohmann::json camera_to_json(const Camera& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < 4; ++r) rows.push_back({c.c2w[r * 4], c.c2w[r * 4 + 1], c.c2w[r * 4 + 2], c.c2w[r * 4 + 3]});
  return {{"c2w", rows}, {"fx", c.fx}, {"fy", c.fy}, {"cx", c.cx}, {"cy", c.cy}, {"w", c.width}, {"h", c.height}};
}

Camera camera_from_json(const nlohmann::json& f, const std::string& where) {
  if (!f.is_object()) throw Error(where, "not a camera (expected {c2w, fx, fy, cx, cy, w, h})");
  Camera c;
  c.c2w = json_matrix4(f, "c2w", where);
  check_rigid_pose(c.c2w, where, "field 'c2w'");
  set_intrinsics(c, json_number(f, "fx", where), json_number(f, "fy", where), json_number(f, "cx", where),
                 json_number(f, "cy", where), where);
  c.width = json_int(f, "w", where, 1, kMaxImageSide);
  c.height = json_int(f, "h", where, 1, kMaxImageSide);
  c.validate(where);
  return c;
}

void write_camera_path(const std::string& path, const std::vector<Camera>& frames) {
  nlohmann::json out{{"format", "lact camera path v1"}, {"frames", nlohmann::json::array()}};
  for (const Camera& c : frames) out["frames"].push_back(camera_to_json(c));
  for (size_t i = 0; i < frames.size(); ++i) frames[i].validate(path + " frame " + std::to_string(i));
  write_file_atomically(path, out.dump(1) + "\n");
}

std::vector<Camera> read_camera_path(const std::string& path) {
  const nlohmann::json json = read_json_file(path);
  if (!json.is_object() || !json.contains("frames") || !json.at("frames").is_array())
    throw Error(path, "not a camera path (expected {\"frames\": [{c2w, fx, fy, cx, cy, w, h}, ...]})");
  std::vector<Camera> frames;
  for (size_t i = 0; i < json.at("frames").size(); ++i) {
    const std::string where = path + " frame " + std::to_string(i);
    frames.push_back(camera_from_json(json.at("frames")[i], where));
  }
  if (frames.empty()) throw Error(path, "the path has no frames");
  return frames;
}

}  // namespace lact
