// JSON helpers shared by the layout readers: every failure becomes Error(where, what).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/camera.h"  // kMaxImageSide

namespace lact {

nlohmann::json read_json_file(const std::filesystem::path& path);
// The JSON in `path` when it is a regular file (not through a link) of at most `max_bytes`, else a discarded
// value (is_discarded()): also when it cannot be read or parsed. For telling lact's own files, never an error.
nlohmann::json json_of_regular_file(const std::string& path, uint64_t max_bytes);

// object[key] as a finite number / string; `where` names the file and frame.
double json_number(const nlohmann::json& object, const char* key, const std::string& where);
bool has_number(const nlohmann::json& object, const char* key);
// An integer field in [min, max] (image sizes and the like).
int json_int(const nlohmann::json& object, const char* key, const std::string& where, int min, int max);
// A string without NUL bytes (paths: a NUL would cut the name short at every system call).
std::string json_string(const nlohmann::json& object, const char* key, const std::string& where);
// Throws Error(where, what + " holds a NUL byte") when `text` has one.
void check_no_nul(const std::string& text, const std::string& where, const std::string& what);
// A JSON integer in [0, count) (booleans, fractions and 64-bit values that would wrap as int refused); `what`
// names the list, e.g. "field 'fold_8_kmeans_32_input'".
int json_index(const nlohmann::json& value, int count, const std::string& where, const std::string& what);
// A 4x4 (or 3x4, completed with 0 0 0 1) row-major matrix of finite numbers.
std::array<double, 16> json_matrix4(const nlohmann::json& object, const char* key, const std::string& where);

// Inverse of a 4x4 matrix (Gauss-Jordan, partial pivoting); false if singular.
bool invert4(const std::array<double, 16>& m, std::array<double, 16>& inverse);
std::array<double, 16> multiply4(const std::array<double, 16>& a, const std::array<double, 16>& b);

}  // namespace lact
