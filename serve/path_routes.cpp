#include "serve/path_routes.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "serve/camera_message.h"
#include "system/error.h"
#include "system/file_io.h"

namespace fs = std::filesystem;

namespace lact::serve {

namespace {

constexpr size_t kMostListed = 1000;  // names in GET /api/paths

[[noreturn]] void refuse(int status, const std::string& message) { throw PathRefusal{status, message}; }

nlohmann::json parse_object(const std::string& body, const char* expected) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded()) refuse(400, std::string("body: not JSON (expected ") + expected + ")");
  if (!json.is_object()) refuse(400, std::string("body: not an object (expected ") + expected + ")");
  return json;
}

// A number field in [low, high] (`fallback` when absent).
double number_field(const nlohmann::json& json, const char* key, double low, double high, double fallback) {
  if (!json.contains(key)) return fallback;
  const nlohmann::json& value = json.at(key);
  const double v = value.is_number() ? value.get<double>() : -1;
  if (!value.is_number() || !(v >= low && v <= high))
    refuse(400,
           std::string(key) + ": a number from " + nlohmann::json(low).dump() + " to " + nlohmann::json(high).dump());
  return v;
}

// The cameras of json[key] (an array of at most `most`), each renderable and all of one size.
std::vector<Camera> cameras_field(const nlohmann::json& json, const char* key, int most, const PathLimits& limits) {
  if (!json.contains(key) || !json.at(key).is_array())
    refuse(400, std::string(key) + ": expected an array of camera-path frames ({c2w, fx, fy, cx, cy, w, h})");
  const nlohmann::json& list = json.at(key);
  if (list.empty()) refuse(400, std::string(key) + ": empty");
  if (list.size() > static_cast<size_t>(most))
    refuse(413, std::string(key) + ": " + std::to_string(list.size()) + ", at most " + std::to_string(most));
  const RenderLimits render{limits.patch, limits.max_side};
  std::vector<Camera> cameras;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    try {
      cameras.push_back(client_camera(list[i], render, where));
    } catch (const std::exception& e) {
      refuse(400, e.what());
    }
    if (cameras[i].width != cameras[0].width || cameras[i].height != cameras[0].height)
      refuse(400, where + ": the cameras differ in size; a path has one size");
  }
  return cameras;
}

nlohmann::json frames_json(const std::vector<Camera>& cameras) {
  nlohmann::json out = nlohmann::json::array();
  for (const Camera& c : cameras) out.push_back(camera_to_json(c));
  return out;
}

std::string file_of(const std::string& folder, const std::string& name) {
  check_path_name(name);
  return (fs::path(folder) / (name + ".json")).string();
}

// `text` into `file` atomically (system/file_io.h's AtomicFile): a failed write leaves an old file whole; without
// `replace` it never replaces a file that appeared meanwhile. The client is told the path's name, not the
// server's folder.
void write_path_file(const std::string& file, const std::string& name, const std::string& text, bool replace) {
  try {
    AtomicFile out(file, replace ? Replace::Allowed : Replace::Never);
    out.write(text);
    out.commit();
  } catch (const Error& e) {
    std::error_code error;
    if (!replace && fs::exists(fs::symlink_status(file, error)))
      refuse(409, "a saved path '" + name + "' appeared meanwhile: kept");
    std::string what = e.what();
    if (what.compare(0, file.size() + 2, file + ": ") == 0) what.erase(0, file.size() + 2);
    refuse(500, "saved path '" + name + "': " + what);
  }
}

}  // namespace

nlohmann::json interpolate_body(const std::string& body, const PathLimits& limits) {
  const nlohmann::json json = parse_object(body, "{\"keyframes\": [...], \"frames\": N, \"smoothness\": s}");
  const std::vector<Camera> keys = cameras_field(json, "keyframes", limits.max_keys, limits);
  if (!json.contains("frames") || !json.at("frames").is_number_integer())
    refuse(400, "frames: an integer from 1 to " + std::to_string(limits.max_frames));
  const int64_t frames = json.at("frames").get<int64_t>();
  if (frames < 1) refuse(400, "frames: an integer from 1 to " + std::to_string(limits.max_frames));
  if (frames > limits.max_frames)
    refuse(413, "frames: " + std::to_string(frames) + ", at most " + std::to_string(limits.max_frames) +
                    " (--max-video-frames)");
  const double smoothness = number_field(json, "smoothness", 0, 1, 0);
  if (keys.size() == 1) return {{"frames", frames_json(std::vector<Camera>(frames, keys[0]))}};
  return {{"frames", frames_json(interpolate_path_frames(keys, static_cast<int>(frames), smoothness))}};
}

void check_path_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 64 && name[0] != '.' && name.find("..") == std::string::npos &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                           c == '_' || c == '-';
                  });
  if (!ok) refuse(400, "path name: 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' and without '..'");
}

nlohmann::json list_paths(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code error;
  size_t seen = 0;  // entries read: a folder of millions is not read whole
  for (fs::directory_iterator it(folder, error), end; !error && it != end && ++seen <= 100 * kMostListed;
       it.increment(error)) {
    const std::string file = it->path().filename().string();
    if (!it->is_regular_file(error) || it->is_symlink(error) || file.size() <= 5 ||
        file.compare(file.size() - 5, 5, ".json") != 0)
      continue;
    const std::string name = file.substr(0, file.size() - 5);
    try {
      check_path_name(name);
      names.push_back(name);
    } catch (const PathRefusal&) {
    }
  }
  std::sort(names.begin(), names.end());
  if (names.size() > kMostListed) names.resize(kMostListed);  // the first, by name: the answer stays small
  return {{"paths", names}};
}

std::string load_path(const std::string& folder, const std::string& name, const PathLimits& limits) {
  const std::string file = file_of(folder, name);
  std::error_code error;
  if (!fs::is_regular_file(fs::symlink_status(file, error))) refuse(404, "no saved path '" + name + "'");
  try {
    return read_whole_file(file, limits.max_bytes);
  } catch (const std::exception& e) {
    refuse(404, std::string("saved path '") + name + "': " + e.what());
  }
}

nlohmann::json save_path(const std::string& folder, const std::string& name, const std::string& body, bool replace,
                         const PathLimits& limits) {
  const std::string file = file_of(folder, name);
  const nlohmann::json json = parse_object(body, "a lact camera path {\"frames\": [...]}");
  const std::vector<Camera> frames = cameras_field(json, "frames", limits.max_frames, limits);
  nlohmann::json out{{"format", "lact camera path v1"}, {"frames", frames_json(frames)}};
  if (json.contains("keyframes"))
    out["keyframes"] = frames_json(cameras_field(json, "keyframes", limits.max_keys, limits));
  if (json.contains("smoothness")) out["smoothness"] = number_field(json, "smoothness", 0, 1, 0);
  if (json.contains("duration")) out["duration"] = number_field(json, "duration", 0.01, 3600, 1);
  if (json.contains("fps")) {
    if (!json.at("fps").is_number_integer()) refuse(400, "fps: an integer from 1 to 120");
    out["fps"] = static_cast<int>(number_field(json, "fps", 1, 120, 30));
  }
  std::error_code error;
  fs::create_directories(folder, error);
  if (error || !fs::is_directory(folder))
    refuse(500, "--out: cannot create the paths folder (" + error.message() + ")");
  const fs::file_status status = fs::symlink_status(file, error);
  if (fs::exists(status)) {
    if (!replace) refuse(409, "a saved path '" + name + "' exists (save with ?replace=1 to replace it)");
    if (!fs::is_regular_file(status)) refuse(409, "'" + name + "' is not a regular file: not replaced");
  } else if (list_paths(folder).at("paths").size() >= std::min(limits.max_saved, kMostListed)) {
    refuse(507, "the server keeps at most " + std::to_string(std::min(limits.max_saved, kMostListed)) +
                    " saved paths: replace one (?replace=1) or remove some from its --out/paths");
  }
  write_path_file(file, name, out.dump(1) + "\n", replace);
  return {{"name", name}, {"file", name + ".json"}, {"frames", frames.size()}};
}

}  // namespace lact::serve
