#include "serve/path_routes.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/camera_geometry.h"
#include "datasets/camera_path_io.h"
#include "serve/camera_message.h"
#include "system/file_io.h"
#include "system/signal_cleanup.h"

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

// A failed step of write_path_file: the temporary removed, the saved file as it was.
[[noreturn]] void write_failed(int fd, const std::string& temporary, const std::string& name, const char* what) {
  const int error = errno;
  if (fd >= 0) ::close(fd);
  ::unlink(temporary.c_str());
  if (error == EEXIST) refuse(409, "a saved path '" + name + "' appeared meanwhile: kept");
  const bool full = error == ENOSPC || error == EFBIG;
  refuse(500, "saved path '" + name + "': " + what + " (" + std::strerror(error) + (full ? ": disk full?" : "") + ")");
}

// `text` into `file` through a temporary beside it: renamed over the old file when `replace` (atomic: a failed
// write leaves the old file whole), else linked in, which never replaces a file that appeared meanwhile.
void write_path_file(const std::string& file, const std::string& name, const std::string& text, bool replace) {
  static std::atomic<unsigned> serial{0};
  const std::string temporary = file + ".part-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) refuse(500, "saved path '" + name + "': cannot write in the paths folder (" + std::strerror(errno) + ")");
  const int token = register_temporary(temporary);  // a signal meanwhile removes it
  struct Unregister {
    int token;
    ~Unregister() { unregister_temporary(token); }
  } unregister{token};
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      write_failed(fd, temporary, name, "write failed");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) write_failed(fd, temporary, name, "cannot flush to disk");
  if (::close(fd) != 0) write_failed(-1, temporary, name, "cannot close");
  if (replace && ::rename(temporary.c_str(), file.c_str()) != 0) write_failed(-1, temporary, name, "cannot rename");
  if (!replace) {
    if (::link(temporary.c_str(), file.c_str()) != 0) write_failed(-1, temporary, name, "cannot link");
    ::unlink(temporary.c_str());
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
  }
  write_path_file(file, name, out.dump(1) + "\n", replace);
  return {{"name", name}, {"file", name + ".json"}, {"frames", frames.size()}};
}

}  // namespace lact::serve
