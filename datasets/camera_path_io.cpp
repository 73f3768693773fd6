#include "datasets/camera_path_io.h"

#include <cmath>
#include <cstdint>

#include "datasets/json_util.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

nlohmann::json camera_to_json(const Camera& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < 4; ++r) rows.push_back({c.c2w[r * 4], c.c2w[r * 4 + 1], c.c2w[r * 4 + 2], c.c2w[r * 4 + 3]});
  return {{"c2w", rows}, {"fx", c.fx}, {"fy", c.fy}, {"cx", c.cx}, {"cy", c.cy}, {"w", c.width}, {"h", c.height}};
}

bool PathFrame::same_world(const PathFrame& other) const {
  if (raw() || other.raw()) return raw() == other.raw();
  for (size_t i = 0; i < pose.world.size(); ++i)
    if (std::abs(pose.world[i] - other.pose.world[i]) > 1e-6 * (1 + std::abs(pose.world[i]))) return false;
  return std::abs(pose.scale - other.pose.scale) <= 1e-6 * pose.scale;
}

namespace {
constexpr const char* kPathFormat = "lact camera path v1";

nlohmann::json frame_to_json(const PathFrame& frame) {
  nlohmann::json json{{"normalize_poses", frame.raw() ? "none" : frame.normalize_poses}};
  if (frame.raw()) return json;
  json["pose_world"] = std::vector<double>(frame.pose.world.begin(), frame.pose.world.end());
  json["pose_scale"] = frame.pose.scale;
  return json;
}
// The format line lact writes; a hand-written path may leave it out. Any other value is a file this version of lact
// may misread (a newer format's fields would be ignored), so it is refused.
void check_path_format(const nlohmann::json& json, const std::string& path) {
  if (!json.contains("format")) return;
  const nlohmann::json& format = json.at("format");
  if (format.is_string() && format.get<std::string>() == kPathFormat) return;
  const std::string shown =
      format.is_string() ? "'" + format.get<std::string>().substr(0, 40) + "'" : format.dump().substr(0, 40);
  throw Error(path, "field 'format' is " + shown + ", not '" + kPathFormat +
                        "' (the format this lact reads; written by another version of lact?)");
}
}  // namespace

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

void validate_path_frames(const std::vector<Camera>& frames, const std::string& where) {
  for (size_t i = 0; i < frames.size(); ++i) frames[i].validate(where + " frame " + std::to_string(i));
}

void write_camera_path(const std::string& path, const std::vector<Camera>& frames, const PathFrame* frame) {
  nlohmann::json out{{"format", kPathFormat}, {"frames", nlohmann::json::array()}};
  for (const Camera& c : frames) out["frames"].push_back(camera_to_json(c));
  if (frame) out["made_by"] = frame->made_by, out["frame"] = frame_to_json(*frame);
  validate_path_frames(frames, path);
  write_file_atomically(path, out.dump(1) + "\n");
}

std::vector<Camera> read_camera_path(const std::string& path) {
  const nlohmann::json json = read_json_file(path);
  if (!json.is_object() || !json.contains("frames") || !json.at("frames").is_array())
    throw Error(path, "not a camera path (expected {\"frames\": [{c2w, fx, fy, cx, cy, w, h}, ...]})");
  check_path_format(json, path);
  std::vector<Camera> frames;
  for (size_t i = 0; i < json.at("frames").size(); ++i) {
    const std::string where = path + " frame " + std::to_string(i);
    frames.push_back(camera_from_json(json.at("frames")[i], where));
  }
  if (frames.empty()) throw Error(path, "the path has no frames");
  return frames;
}

}  // namespace lact

namespace lact {

PathFrame read_camera_path_frame(const std::string& path) {
  const nlohmann::json json = read_json_file(path);
  PathFrame frame;
  if (!json.is_object() || !json.contains("frame")) return frame;
  const std::string where = path + " field 'frame'";
  const nlohmann::json& f = json.at("frame");
  if (!f.is_object() || !f.contains("normalize_poses") || !f.at("normalize_poses").is_string())
    throw Error(where, "must be an object with normalize_poses (none, inputs or all)");
  frame.recorded = true;
  frame.normalize_poses = f.at("normalize_poses").get<std::string>();
  if (frame.normalize_poses != "none" && frame.normalize_poses != "inputs" && frame.normalize_poses != "all")
    throw Error(where, "normalize_poses must be none, inputs or all");
  if (json.contains("made_by") && json.at("made_by").is_string()) frame.made_by = json.at("made_by").get<std::string>();
  if (frame.raw()) return frame;
  const nlohmann::json world = f.value("pose_world", nlohmann::json());
  const nlohmann::json scale = f.value("pose_scale", nlohmann::json());
  if (!world.is_array() || world.size() != 16 || !scale.is_number())
    throw Error(where, "a normalised frame needs pose_world (16 numbers) and pose_scale");
  for (size_t i = 0; i < 16; ++i) {
    if (!world[i].is_number() || !std::isfinite(world[i].get<double>()))
      throw Error(where, "pose_world holds something other than a finite number");
    frame.pose.world[i] = world[i].get<double>();
  }
  frame.pose.scale = scale.get<double>();
  if (!(frame.pose.scale > 0) || !std::isfinite(frame.pose.scale)) throw Error(where, "pose_scale must be positive");
  return frame;
}

bool is_lact_camera_path(const std::string& path) {
  constexpr uint64_t kLargest = uint64_t{1} << 30;  // read_json_file's bound: a path of 100k frames is ~100 MB
  const nlohmann::json json = json_of_regular_file(path, kLargest);
  if (!json.is_object() || !json.contains("frames") || !json.at("frames").is_array()) return false;
  const auto format = json.find("format");
  if (format == json.end() || !format->is_string() || format->get<std::string>() != kPathFormat) return false;
  for (const auto& item : json.items())
    if (item.key() != "format" && item.key() != "frames" && item.key() != "made_by" && item.key() != "frame")
      return false;
  return true;
}

}  // namespace lact
