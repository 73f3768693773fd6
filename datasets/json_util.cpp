#include "datasets/json_util.h"

#include <sys/stat.h>

#include <cmath>

#include "system/error.h"
#include "system/file_io.h"
#include "system/json_text.h"

namespace lact {

nlohmann::json json_of_regular_file(const std::string& path, uint64_t max_bytes) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || static_cast<uint64_t>(info.st_size) > max_bytes)
    return nlohmann::json::value_t::discarded;
  try {
    return nlohmann::json::parse(read_whole_file(path, max_bytes), nullptr, false);
  } catch (const Error&) {
    return nlohmann::json::value_t::discarded;  // unreadable
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  constexpr uint64_t kMaxJsonBytes = uint64_t{1} << 30;  // camera files of 100k frames are ~100 MB
  return parse_json_text(read_whole_file(path.string(), kMaxJsonBytes), path.string());
}

int json_int(const nlohmann::json& object, const char* key, const std::string& where, int min, int max) {
  const double x = json_number(object, key, where);
  if (x < min || x > max || x != std::floor(x))
    throw Error(where, std::string("field '") + key + "' must be an integer in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
  return static_cast<int>(x);
}

bool has_number(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object.at(key).is_number();
}

double json_number(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) throw Error(where, std::string("missing field '") + key + "'");
  const nlohmann::json& v = object.at(key);
  if (!v.is_number()) throw Error(where, std::string("field '") + key + "' is not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw Error(where, std::string("field '") + key + "' is not finite");
  return x;
}

std::string json_string(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) throw Error(where, std::string("missing field '") + key + "'");
  if (!object.at(key).is_string()) throw Error(where, std::string("field '") + key + "' is not a string");
  std::string text = object.at(key).get<std::string>();
  check_no_nul(text, where, std::string("field '") + key + "'");
  return text;
}

void check_no_nul(const std::string& text, const std::string& where, const std::string& what) {
  // A path with a NUL byte would be cut short at it by every system call: another file than the one named.
  if (text.find('\0') != std::string::npos) throw Error(where, what + " holds a NUL byte");
}

int json_index(const nlohmann::json& value, int count, const std::string& where, const std::string& what) {
  if (!value.is_number_integer())
    throw Error(where, what + " holds " + value.dump().substr(0, 40) + ", not an integer view index");
  // nlohmann's get<int>() wraps 4294967296 to 0: compare the stored 64-bit value, signed or unsigned.
  const bool in_range = value.is_number_unsigned() ? value.get<uint64_t>() < static_cast<uint64_t>(count)
                                                   : value.get<int64_t>() >= 0 && value.get<int64_t>() < count;
  if (!in_range)
    throw Error(where,
                what + " holds view " + value.dump() + ", out of range for " + std::to_string(count) + " frames");
  return static_cast<int>(value.get<int64_t>());
}

std::array<double, 16> json_matrix4(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) throw Error(where, std::string("missing field '") + key + "'");
  const nlohmann::json& m = object.at(key);
  const std::string what = std::string("field '") + key + "'";
  if (!m.is_array() || (m.size() != 4 && m.size() != 3)) throw Error(where, what + " must be a 4x4 (or 3x4) matrix");
  std::array<double, 16> out{};
  out[15] = 1.0;
  for (size_t r = 0; r < m.size(); ++r) {
    if (!m[r].is_array() || m[r].size() != 4) throw Error(where, what + " must be a 4x4 (or 3x4) matrix");
    for (int c = 0; c < 4; ++c) {
      if (!m[r][c].is_number()) throw Error(where, what + " holds a non-number");
      out[r * 4 + c] = m[r][c].get<double>();
      if (!std::isfinite(out[r * 4 + c])) throw Error(where, what + " holds NaN or infinity");
    }
  }
  return out;
}

bool invert4(const std::array<double, 16>& m, std::array<double, 16>& inverse) {
  double a[4][8];
  double scale = 0;
  for (double v : m) scale = std::max(scale, std::abs(v));
  if (scale == 0) return false;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) a[r][c] = c < 4 ? m[r * 4 + c] : (c - 4 == r ? 1.0 : 0.0);
  for (int col = 0; col < 4; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 4; ++r)
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    if (std::abs(a[pivot][col]) < 1e-12 * scale) return false;
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
    for (int c = 0; c < 4; ++c) inverse[r * 4 + c] = a[r][c + 4];
  return true;
}

std::array<double, 16> multiply4(const std::array<double, 16>& a, const std::array<double, 16>& b) {
  std::array<double, 16> c{};
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 4; ++k)
      for (int col = 0; col < 4; ++col) c[r * 4 + col] += a[r * 4 + k] * b[k * 4 + col];
  return c;
}

}  // namespace lact
