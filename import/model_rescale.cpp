#include "import/model_rescale.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <vector>

#include "datasets/colmap_model.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxModelBytes = uint64_t{4} << 30;

// Whether COLMAP's model `id` has one focal length (f, cx, cy, ...) rather than two (fx, fy, cx, cy, ...).
bool single_focal(int id) {
  const std::string name = colmap_model_name(id);
  return name == "SIMPLE_PINHOLE" || name == "SIMPLE_RADIAL" || name == "RADIAL" || name == "SIMPLE_RADIAL_FISHEYE" ||
         name == "RADIAL_FISHEYE";
}

ColmapCamera scaled_camera(const ColmapCamera& camera, uint32_t id, int width, int height) {
  const double sx = static_cast<double>(width) / camera.width, sy = static_cast<double>(height) / camera.height;
  ColmapCamera out = camera;
  out.id = id, out.width = width, out.height = height;
  if (single_focal(camera.model)) {
    out.params[0] *= std::sqrt(sx * sy), out.params[1] *= sx, out.params[2] *= sy;
  } else {
    out.params[0] *= sx, out.params[1] *= sy, out.params[2] *= sx, out.params[3] *= sy;
  }
  return out;
}

// The new cameras, and for each image (by id) its new camera and its scale along x and y.
struct Plan {
  std::vector<ColmapCamera> cameras;
  std::map<uint32_t, std::tuple<uint32_t, double, double>> images;
};

Plan plan(const ColmapModel& model, const std::map<std::string, std::pair<int, int>>& sizes) {
  std::map<uint32_t, const ColmapCamera*> by_id;
  for (const ColmapCamera& c : model.cameras) by_id[c.id] = &c;
  std::map<std::tuple<uint32_t, int, int>, uint32_t> made;  // (old camera, width, height) -> new camera
  Plan p;
  for (const ColmapImage& image : model.images) {
    const ColmapCamera& camera = *by_id.at(image.camera_id);  // read_colmap_model checked it is there
    const auto size = sizes.find(image.name);
    const int w = size == sizes.end() ? camera.width : size->second.first;
    const int h = size == sizes.end() ? camera.height : size->second.second;
    const auto key = std::make_tuple(camera.id, w, h);
    if (!made.count(key)) {
      made[key] = static_cast<uint32_t>(p.cameras.size() + 1);
      p.cameras.push_back(scaled_camera(camera, made[key], w, h));
    }
    p.images[image.id] = {made[key], static_cast<double>(w) / camera.width, static_cast<double>(h) / camera.height};
  }
  return p;
}

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian, as COLMAP writes (lact's hosts are)
  out.append(bytes, sizeof(T));
}

std::string cameras_binary(const std::vector<ColmapCamera>& cameras) {
  std::string out;
  put<uint64_t>(out, cameras.size());
  for (const ColmapCamera& c : cameras) {
    put<uint32_t>(out, c.id), put<int32_t>(out, c.model);
    put<uint64_t>(out, static_cast<uint64_t>(c.width)), put<uint64_t>(out, static_cast<uint64_t>(c.height));
    for (double v : c.params) put<double>(out, v);
  }
  return out;
}

std::string cameras_text(const std::vector<ColmapCamera>& cameras) {
  std::string out = "# Camera list with one line of data per camera:\n#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n";
  char number[40];
  for (const ColmapCamera& c : cameras) {
    out += std::to_string(c.id) + " " + colmap_model_name(c.model) + " " + std::to_string(c.width) + " " +
           std::to_string(c.height);
    for (double v : c.params) std::snprintf(number, sizeof number, " %.17g", v), out += number;
    out += "\n";
  }
  return out;
}

// Reads little-endian fields of `bytes` in order; Error naming `path` past its end.
struct Fields {
  const std::string& bytes;
  const std::string& path;
  size_t at = 0;
  const char* take(size_t n) {
    if (n > bytes.size() - at) throw Error(path, "ends inside a record (truncated)");
    const char* p = bytes.data() + at;
    at += n;
    return p;
  }
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
};

// images.bin again, each image's camera id replaced and its 2D points scaled (the rest copied as it is).
std::string images_binary(const std::string& path, const Plan& p) {
  const std::string bytes = read_whole_file(path, kMaxModelBytes);
  Fields in{bytes, path};
  std::string out;
  const uint64_t count = in.get<uint64_t>();
  put<uint64_t>(out, count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t id = in.get<uint32_t>();
    const auto& [camera, sx, sy] = p.images.at(id);  // read_colmap_model read the same file
    put<uint32_t>(out, id);
    out.append(in.take(7 * sizeof(double)), 7 * sizeof(double));
    in.get<uint32_t>();
    put<uint32_t>(out, camera);
    const size_t name_end = bytes.find('\0', in.at);
    if (name_end == std::string::npos) throw Error(path, "an image name has no end (truncated)");
    const size_t name_size = name_end + 1 - in.at;
    out.append(in.take(name_size), name_size);
    const uint64_t points = in.get<uint64_t>();
    if (points > (bytes.size() - in.at) / 24) throw Error(path, "an image's 2D point count runs past the file's end");
    put<uint64_t>(out, points);
    for (uint64_t k = 0; k < points; ++k) {
      put<double>(out, in.get<double>() * sx), put<double>(out, in.get<double>() * sy);
      put<int64_t>(out, in.get<int64_t>());
    }
  }
  return out;
}

// The whitespace-separated words of a line.
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  for (size_t at = line.find_first_not_of(" \t\r"); at != std::string::npos; at = line.find_first_not_of(" \t\r", at)) {
    const size_t end = std::min(line.find_first_of(" \t\r", at), line.size());
    out.push_back(line.substr(at, end - at));
    at = end;
  }
  return out;
}

double number(const std::string& word, const std::string& path) {
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (word.empty() || end != word.c_str() + word.size())
    throw Error(path, "'" + word.substr(0, 40) + "' is not a number");
  return v;
}

// The 2D points line of an image ("X Y POINT3D_ID ..."), scaled.
std::string scaled_points(const std::string& line, double sx, double sy, const std::string& path) {
  const std::vector<std::string> w = words(line);
  if (w.size() % 3 != 0)
    throw Error(path, "a 2D points line holds " + std::to_string(w.size()) + " numbers, not triples");
  std::string out;
  char text[40];
  for (size_t k = 0; k < w.size(); k += 3) {
    std::snprintf(text, sizeof text, "%.17g %.17g", number(w[k], path) * sx, number(w[k + 1], path) * sy);
    out += (k ? " " : "") + std::string(text) + " " + w[k + 2];
  }
  return out;
}

// images.txt again: each image line's camera id (its 9th field) replaced, the points line after it scaled.
std::string images_text(const std::string& path, const Plan& p) {
  const std::string bytes = read_whole_file(path, kMaxModelBytes);
  std::string out;
  double sx = 1, sy = 1;
  bool points_next = false;
  for (size_t at = 0; at < bytes.size();) {
    const size_t end = std::min(bytes.find('\n', at), bytes.size());
    const std::string line = bytes.substr(at, end - at);
    at = end + 1;
    if (!points_next && (line.empty() || line[0] == '#')) {
      out += line + "\n";
      continue;
    }
    if (points_next) {
      out += scaled_points(line, sx, sy, path) + "\n";
      points_next = false;
      continue;
    }
    const std::vector<std::string> w = words(line);
    if (w.size() < 10) throw Error(path, "an image line has " + std::to_string(w.size()) + " fields, not 10");
    const auto& [camera, x, y] = p.images.at(static_cast<uint32_t>(number(w[0], path)));
    sx = x, sy = y, points_next = true;
    size_t name_at = 0;  // past the first 9 fields: the name may hold spaces
    for (int k = 0; k < 9; ++k) name_at = line.find_first_of(" \t", line.find_first_not_of(" \t", name_at));
    name_at = line.find_first_not_of(" \t", name_at);
    out += w[0];
    for (int k = 1; k < 8; ++k) out += " " + w[k];
    out += " " + std::to_string(camera) + " " + line.substr(name_at) + "\n";
  }
  return out;
}

}  // namespace

void rescale_colmap_model(const fs::path& folder, const std::map<std::string, std::pair<int, int>>& sizes) {
  const ColmapModel model = read_colmap_model(folder);
  const Plan p = plan(model, sizes);
  const std::string ext = model.binary ? ".bin" : ".txt";
  const std::string images = (folder / ("images" + ext)).string();
  const std::string images_out = model.binary ? images_binary(images, p) : images_text(images, p);
  write_file_atomically((folder / ("cameras" + ext)).string(),
                        model.binary ? cameras_binary(p.cameras) : cameras_text(p.cameras));
  write_file_atomically(images, images_out);
}

}  // namespace lact
