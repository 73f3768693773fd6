// Small helpers shared by the tests: random data, error measures, fixture paths.
#pragma once

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "system/error.h"

namespace lact::test {

// The message of the lact::Error that `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline std::vector<float> random_values(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

inline double max_abs_error(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = a.size() == b.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

inline double max_abs_error(const std::vector<float>& a, const std::vector<float>& b) {
  return max_abs_error(a, std::vector<double>(b.begin(), b.end()));
}

// ||a - b||_F / ||b||_F
inline double relative_error(const std::vector<float>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  return std::sqrt(diff / std::max(ref, 1e-300));
}

inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  return relative_error(a, std::vector<double>(b.begin(), b.end()));
}

// A file's bytes ("" when it cannot be read), and a file made to hold exactly `bytes`.
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A directory given through the environment (CTest sets it; see tests/CMakeLists.txt), else the build's default.
inline std::string env_path(const char* name) {
  const char* value = std::getenv(name);
  if (value) return value;
  const std::string key(name);
#ifdef LACT_FIXTURE_DIR_DEFAULT
  if (key == "LACT_FIXTURE_DIR") return LACT_FIXTURE_DIR_DEFAULT;
#endif
#ifdef LACT_FIXTURE_V2_DIR_DEFAULT
  if (key == "LACT_FIXTURE_V2_DIR") return LACT_FIXTURE_V2_DIR_DEFAULT;
#endif
#ifdef LACT_REFERENCE_CASES_DEFAULT
  if (key == "LACT_REFERENCE_CASES") return LACT_REFERENCE_CASES_DEFAULT;
#endif
  return "";
}

}  // namespace lact::test
