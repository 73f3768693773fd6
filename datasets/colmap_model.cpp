#include "datasets/colmap_model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "core/camera.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxNameBytes = 4096;
constexpr size_t kMaxLineBytes = 65536;

struct ModelInfo {
  const char* name;
  int params;
};

// COLMAP's camera models by id (src/colmap/sensor/models.h); 7, 10 and 11 are read but not converted.
const ModelInfo kModels[] = {
    {"SIMPLE_PINHOLE", 3},
    {"PINHOLE", 4},
    {"SIMPLE_RADIAL", 4},
    {"RADIAL", 5},
    {"OPENCV", 8},
    {"OPENCV_FISHEYE", 8},
    {"FULL_OPENCV", 12},
    {"FOV", 5},
    {"SIMPLE_RADIAL_FISHEYE", 4},
    {"RADIAL_FISHEYE", 5},
    {"THIN_PRISM_FISHEYE", 12},
    {"RAD_TAN_THIN_PRISM_FISHEYE", 16},
};
constexpr int kModelCount = static_cast<int>(sizeof(kModels) / sizeof(kModels[0]));

// What a model file that is not a regular file is, in words ("a FIFO (named pipe)"), from stat() alone: nothing
// is opened, since opening a FIFO for reading blocks until a writer comes. Empty for a regular file.
std::string special_file_kind(const std::string& path) {
  struct stat link {
  }, target{};
  if (::lstat(path.c_str(), &link) != 0) return "";  // missing: require_regular_file says so
  if (::stat(path.c_str(), &target) != 0) {
    if (errno == ELOOP) return "a loop of symbolic links";
    if (errno == ENOENT) return "a symbolic link to a missing file";
    return "";  // (permissions and the like: require_regular_file names the error)
  }
  const std::string through = S_ISLNK(link.st_mode) ? " (through a symbolic link)" : "";
  if (S_ISDIR(target.st_mode)) return "a folder" + through;
  if (S_ISFIFO(target.st_mode)) return "a FIFO (named pipe)" + through;
  if (S_ISCHR(target.st_mode)) return "a character device" + through;
  if (S_ISBLK(target.st_mode)) return "a block device" + through;
  if (S_ISSOCK(target.st_mode)) return "a socket" + through;
  return "";
}

// A model file must be a regular file; anything else is named for what it is (a FIFO, a device such as
// /dev/zero behind a link, a folder, a link loop) instead of the folder being taken for one without a model.
void require_model_file(const std::string& path) {
  const std::string kind = special_file_kind(path);
  if (!kind.empty()) throw Error(path, "is " + kind + ", not a COLMAP model file");
  require_regular_file(path);
}

// A regular file read front to back with its size known, so that every count can be checked against the bytes
// left before anything is allocated. Numbers are decoded little-endian byte by byte (any host).
class BinaryReader {
 public:
  explicit BinaryReader(const std::string& path) : path_(path) {
    require_model_file(path);
    std::error_code ec;
    size_ = fs::file_size(path, ec);
    if (ec) throw Error(path, "cannot read its size: " + ec.message());
    in_.open(path, std::ios::binary);
    if (!in_) throw Error(path, "cannot be opened");
  }
  uint64_t remaining() const { return size_ - offset_; }
  uint64_t u64(const std::string& field) {
    uint8_t b[8];
    bytes(b, 8, field);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  uint32_t u32(const std::string& field) {
    uint8_t b[4];
    bytes(b, 4, field);
    return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  }
  int32_t i32(const std::string& field) {
    const uint32_t u = u32(field);
    int32_t v;
    std::memcpy(&v, &u, 4);
    return v;
  }
  double f64(const std::string& field) {
    const uint64_t u = u64(field);
    double v;
    std::memcpy(&v, &u, 8);
    return v;
  }
  std::string name(const std::string& field) {
    std::string s;
    for (;;) {
      uint8_t c;
      bytes(&c, 1, field);
      if (c == 0) return s;
      if (s.size() == kMaxNameBytes)
        throw Error(path_, field + " has no NUL within " + std::to_string(kMaxNameBytes) + " bytes");
      s.push_back(static_cast<char>(c));
    }
  }
  void skip(uint64_t n, const std::string& field) {
    if (n > remaining()) throw truncated(field);
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    offset_ += n;
    if (!in_) throw Error(path_, field + ": read failed");
  }

 private:
  Error truncated(const std::string& field) const {
    return Error(path_, field + " is truncated (the file ends at byte " + std::to_string(size_) + ")");
  }
  void bytes(void* out, size_t n, const std::string& field) {
    if (n > remaining()) throw truncated(field);
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    if (!in_) throw Error(path_, field + ": read failed");
    offset_ += n;
  }
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0, offset_ = 0;
};

// "camera record 2 of 5" / "image record 0 of 1".
std::string record_name(const char* kind, uint64_t i, uint64_t count) {
  return std::string(kind) + " record " + std::to_string(i) + " of " + std::to_string(count);
}

void check_count(const std::string& path, const char* kind, uint64_t count, uint64_t remaining, uint64_t smallest) {
  if (count > remaining / smallest)
    throw Error(path, "the " + std::string(kind) + " count " + std::to_string(count) + " cannot fit in the " +
                          std::to_string(remaining) + " bytes that follow it (at least " + std::to_string(smallest) +
                          " per " + kind + "): the count lies or the file is truncated");
}

void check_no_trailing_bytes(const std::string& path, const BinaryReader& in, const char* kind, uint64_t count) {
  if (in.remaining())
    throw Error(path, std::to_string(in.remaining()) + " bytes follow the last of the " + std::to_string(count) + " " +
                          kind + "s the count states: the count lies or the file is corrupt");
}

void check_finite(const std::string& path, const std::string& record, const char* field, const double* v, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) throw Error(path, record + ": field '" + field + "' holds NaN or infinity");
}

void check_size(const std::string& path, const std::string& record, const char* field, uint64_t value) {
  if (value < 1 || value > static_cast<uint64_t>(kMaxImageSide))
    throw Error(path, record + ": field '" + field + "' is " + std::to_string(value) + ", outside 1.." +
                          std::to_string(kMaxImageSide));
}

// Parameter count of `model`, or an error naming the id.
int params_of(const std::string& path, const std::string& record, int model) {
  const int n = colmap_model_param_count(model);
  if (n < 0) throw Error(path, record + ": unknown camera model id " + std::to_string(model));
  return n;
}

void check_unique_camera(const std::string& path, const std::string& record, std::set<uint32_t>& ids, uint32_t id) {
  if (!ids.insert(id).second) throw Error(path, record + ": camera id " + std::to_string(id) + " appears twice");
}

// What makes an image name unsafe to join to the images folder ("" when nothing): names are relative to it, so an
// absolute name or one climbing out with ".." would read any file on the machine; a NUL would cut it short.
std::string unsafe_name(const std::string& name) {
  if (name.find('\0') != std::string::npos) return "holds a NUL byte";
  if (name[0] == '/') return "is absolute: names are relative to the images folder";
  const fs::path path(name);
  for (const fs::path& part : path)
    if (part == "..") return "climbs out of the images folder with '..'";
  return "";
}

// What is wrong with an image's id or name given the ones before it ("" when nothing).
std::string duplicate_image(std::set<uint32_t>& ids, std::set<std::string>& names, const ColmapImage& image) {
  if (image.name.empty()) return "field 'name' is empty";
  const std::string unsafe = unsafe_name(image.name);
  if (!unsafe.empty()) return "image name '" + image.name.substr(0, 200) + "' " + unsafe;
  if (!ids.insert(image.id).second) return "image id " + std::to_string(image.id) + " appears twice";
  if (!names.insert(image.name).second) return "image name '" + image.name + "' appears twice";
  return "";
}

}  // namespace

std::string colmap_model_name(int model_id) {
  return model_id >= 0 && model_id < kModelCount ? kModels[model_id].name : "";
}

int colmap_model_id(const std::string& name) {
  for (int i = 0; i < kModelCount; ++i)
    if (name == kModels[i].name) return i;
  return -1;
}

int colmap_model_param_count(int model_id) {
  return model_id >= 0 && model_id < kModelCount ? kModels[model_id].params : -1;
}

std::vector<ColmapCamera> read_colmap_cameras_binary(const std::string& path) {
  BinaryReader in(path);
  const uint64_t count = in.u64("the camera count");
  check_count(path, "camera", count, in.remaining(), 4 + 4 + 8 + 8 + 3 * 8);
  std::vector<ColmapCamera> cameras(count);
  std::set<uint32_t> ids;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string record = record_name("camera", i, count);
    ColmapCamera& c = cameras[i];
    c.id = in.u32(record + ": field 'camera_id'");
    check_unique_camera(path, record, ids, c.id);
    c.model = in.i32(record + ": field 'model_id'");
    const int n = params_of(path, record + " (camera " + std::to_string(c.id) + ")", c.model);
    const uint64_t width = in.u64(record + ": field 'width'"), height = in.u64(record + ": field 'height'");
    check_size(path, record, "width", width);
    check_size(path, record, "height", height);
    c.width = static_cast<int>(width), c.height = static_cast<int>(height);
    for (int k = 0; k < n; ++k) c.params.push_back(in.f64(record + ": field 'params'"));
    check_finite(path, record, "params", c.params.data(), n);
  }
  check_no_trailing_bytes(path, in, "camera", count);
  return cameras;
}

std::vector<ColmapImage> read_colmap_images_binary(const std::string& path) {
  BinaryReader in(path);
  const uint64_t count = in.u64("the image count");
  check_count(path, "image", count, in.remaining(), 4 + 7 * 8 + 4 + 2 + 8);
  std::vector<ColmapImage> images(count);
  std::set<uint32_t> ids;
  std::set<std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    std::string record = record_name("image", i, count);
    ColmapImage& image = images[i];
    image.id = in.u32(record + ": field 'image_id'");
    for (double& q : image.q) q = in.f64(record + ": field 'qvec'");
    for (double& t : image.t) t = in.f64(record + ": field 'tvec'");
    image.camera_id = in.u32(record + ": field 'camera_id'");
    image.name = in.name(record + ": field 'name'");
    record += " ('" + image.name + "')";
    const uint64_t points = in.u64(record + ": field 'num_points2D'");
    if (points > in.remaining() / 24)
      throw Error(path, record + ": field 'num_points2D' is " + std::to_string(points) + " (24 bytes each) but only " +
                            std::to_string(in.remaining()) + " bytes follow: the count lies or the file is truncated");
    in.skip(points * 24, record + ": the 2D points");
    check_finite(path, record, "qvec", image.q.data(), 4);
    check_finite(path, record, "tvec", image.t.data(), 3);
    const std::string duplicate = duplicate_image(ids, names, image);
    if (!duplicate.empty()) throw Error(path, record + ": " + duplicate);
  }
  check_no_trailing_bytes(path, in, "image", count);
  return images;
}

namespace {

// A text model file read line by line (lines at most kMaxLineBytes, except 2D point lines, which are only scanned).
class TextReader {
 public:
  explicit TextReader(const std::string& path) : path_(path) {
    require_model_file(path);
    in_.open(path, std::ios::binary);
    if (!in_) throw Error(path, "cannot be opened");
  }
  // The next line that is neither empty nor a comment, split at blanks; false at the end of the file. `fields`
  // names the columns (the last one repeats: PARAMS, NAME) for the line that refuses a NUL byte.
  bool next_record(std::vector<std::string>& tokens, std::string& line, const std::vector<const char*>& fields) {
    while (read_line(line)) {
      tokens = split(line);
      if (tokens.empty() || tokens[0][0] == '#') continue;
      refuse_nul(tokens, fields);
      return true;
    }
    return false;
  }
  // The line after an image line: its 2D points "X Y POINT3D_ID ..." (possibly none), checked to look like
  // numbers in threes without storing it (a line per image can hold many thousands of points).
  void skip_points_line(const std::string& image) {
    ++line_number_;
    size_t tokens = 0;
    bool in_token = false, numeric = true;
    for (int c = in_.get(); c != EOF && c != '\n'; c = in_.get()) {
      const bool blank = c == ' ' || c == '\t' || c == '\r';
      if (!blank && !in_token) ++tokens;
      in_token = !blank;
      if (!blank && !std::strchr("0123456789+-.eE", c)) numeric = false;
    }
    if (!numeric || tokens % 3 != 0)
      throw Error(path_, "line " + std::to_string(line_number_) + ": expected the 2D points of image '" + image +
                             "' (X Y POINT3D_ID triples; images.txt has two lines per image, the second may be empty)");
  }
  Error error(const std::string& what) const {
    return Error(path_, "line " + std::to_string(line_number_) + ": " + what);
  }
  double number(const std::string& token, const char* field) const {
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (token.empty() || *end != '\0')
      throw error("field '" + std::string(field) + "' is '" + token.substr(0, 40) + "', not a number");
    if (!std::isfinite(v)) throw error("field '" + std::string(field) + "' holds NaN or infinity");
    return v;
  }
  uint64_t integer(const std::string& token, const char* field, uint64_t max) const {
    if (token.empty() || token.size() > 19 || token.find_first_not_of("0123456789") != std::string::npos ||
        std::strtoull(token.c_str(), nullptr, 10) > max)
      throw error("field '" + std::string(field) + "' is '" + token.substr(0, 40) + "', not an integer in 0.." +
                  std::to_string(max));
    return std::strtoull(token.c_str(), nullptr, 10);
  }

 private:
  bool read_line(std::string& line) {
    line.clear();
    int c = in_.get();
    if (c == EOF) return false;
    ++line_number_;
    for (; c != EOF && c != '\n'; c = in_.get()) {
      if (line.size() == kMaxLineBytes) throw error("line longer than " + std::to_string(kMaxLineBytes) + " bytes");
      line.push_back(static_cast<char>(c));
    }
    return true;
  }
  // A NUL cuts a field short wherever it becomes a C string (strtod stops there, "1.5\0junk" reads as 1.5; an
  // error line printed with it ends there): refused, naming the field.
  void refuse_nul(const std::vector<std::string>& tokens, const std::vector<const char*>& fields) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].find('\0') != std::string::npos)
        throw error("field '" + std::string(fields[std::min(i, fields.size() - 1)]) + "' holds a NUL byte");
  }
  static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> tokens;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      const size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > start) tokens.push_back(line.substr(start, i - start));
    }
    return tokens;
  }
  std::string path_;
  std::ifstream in_;
  size_t line_number_ = 0;
};

// The NAME field: everything after the ninth field, without surrounding blanks (names may hold spaces).
std::string name_after_fields(const std::string& line, int fields) {
  size_t i = 0;
  for (int f = 0; f < fields; ++f) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  }
  const size_t start = line.find_first_not_of(" \t", i);
  if (start == std::string::npos) return "";
  const size_t end = line.find_last_not_of(" \t\r");
  return line.substr(start, end - start + 1);
}

}  // namespace

std::vector<ColmapCamera> read_colmap_cameras_text(const std::string& path) {
  TextReader in(path);
  std::vector<ColmapCamera> cameras;
  std::vector<std::string> t;
  std::string line;
  std::set<uint32_t> ids;
  while (in.next_record(t, line, {"CAMERA_ID", "MODEL", "WIDTH", "HEIGHT", "PARAMS"})) {
    if (t.size() < 4) throw in.error("expected CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]");
    ColmapCamera c;
    c.id = static_cast<uint32_t>(in.integer(t[0], "CAMERA_ID", UINT32_MAX));
    const std::string record = "camera " + std::to_string(c.id);
    if (!ids.insert(c.id).second) throw in.error(record + " appears twice");
    c.model = colmap_model_id(t[1]);
    if (c.model < 0) throw in.error(record + ": unknown camera model '" + t[1].substr(0, 40) + "'");
    c.width = static_cast<int>(in.integer(t[2], "WIDTH", kMaxImageSide));
    c.height = static_cast<int>(in.integer(t[3], "HEIGHT", kMaxImageSide));
    if (c.width < 1 || c.height < 1) throw in.error(record + ": WIDTH and HEIGHT must be at least 1");
    const size_t n = static_cast<size_t>(colmap_model_param_count(c.model));
    if (t.size() - 4 != n)
      throw in.error(record + ": model " + t[1] + " has " + std::to_string(n) + " params, the line has " +
                     std::to_string(t.size() - 4));
    for (size_t k = 0; k < n; ++k) c.params.push_back(in.number(t[4 + k], "PARAMS"));
    cameras.push_back(std::move(c));
  }
  return cameras;
}

std::vector<ColmapImage> read_colmap_images_text(const std::string& path) {
  TextReader in(path);
  std::vector<ColmapImage> images;
  std::vector<std::string> t;
  std::string line;
  std::set<uint32_t> ids;
  std::set<std::string> names;
  const char* fields[] = {"QW", "QX", "QY", "QZ", "TX", "TY", "TZ"};
  while (in.next_record(t, line, {"IMAGE_ID", "QW", "QX", "QY", "QZ", "TX", "TY", "TZ", "CAMERA_ID", "NAME"})) {
    if (t.size() < 10) throw in.error("expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME");
    ColmapImage image;
    image.id = static_cast<uint32_t>(in.integer(t[0], "IMAGE_ID", UINT32_MAX));
    for (int k = 0; k < 7; ++k) (k < 4 ? image.q[k] : image.t[k - 4]) = in.number(t[1 + k], fields[k]);
    image.camera_id = static_cast<uint32_t>(in.integer(t[8], "CAMERA_ID", UINT32_MAX));
    image.name = name_after_fields(line, 9);
    if (image.name.size() > kMaxNameBytes)
      throw in.error("field 'NAME' is longer than " + std::to_string(kMaxNameBytes) + " bytes");
    const std::string duplicate = duplicate_image(ids, names, image);
    if (!duplicate.empty()) throw in.error(duplicate);
    in.skip_points_line(image.name);
    images.push_back(std::move(image));
  }
  return images;
}

namespace {
// Whether the folder has an entry of that name, of any type (lstat: a dangling link, a loop, a FIFO count).
bool has_entry(const fs::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool has_model_pair(const fs::path& folder, const char* ext) {
  return has_entry(folder / ("cameras" + std::string(ext))) && has_entry(folder / ("images" + std::string(ext)));
}
}  // namespace

// The names decide, not the file types: a folder whose cameras.bin is a FIFO, a link or a folder is a model
// whose file is wrong (read_colmap_model says what it is), not a folder without a model.
bool is_colmap_model_folder(const fs::path& folder) {
  return has_model_pair(folder, ".bin") || has_model_pair(folder, ".txt");
}

ColmapModel read_colmap_model(const fs::path& folder) {
  ColmapModel model;
  model.folder = folder;
  model.binary = has_model_pair(folder, ".bin");
  const std::string ext = model.binary ? ".bin" : ".txt";
  const std::string cameras_path = (folder / ("cameras" + ext)).string(),
                    images_path = (folder / ("images" + ext)).string();
  if (!model.binary && !has_model_pair(folder, ".txt"))
    throw Error(folder.string(), "holds no COLMAP model (cameras.bin + images.bin, or cameras.txt + images.txt)");
  model.cameras = model.binary ? read_colmap_cameras_binary(cameras_path) : read_colmap_cameras_text(cameras_path);
  model.images = model.binary ? read_colmap_images_binary(images_path) : read_colmap_images_text(images_path);
  if (model.images.empty()) throw Error(images_path, "the model has no registered images");
  std::set<uint32_t> camera_ids;
  for (const ColmapCamera& c : model.cameras) camera_ids.insert(c.id);
  for (const ColmapImage& image : model.images)
    if (!camera_ids.count(image.camera_id))
      throw Error(images_path, "image " + std::to_string(image.id) + " ('" + image.name + "') refers to camera " +
                                   std::to_string(image.camera_id) + ", which " +
                                   fs::path(cameras_path).filename().string() + " does not hold");
  return model;
}

}  // namespace lact
