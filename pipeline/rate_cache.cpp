#include "pipeline/rate_cache.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "system/file_io.h"

namespace lact {

namespace {

constexpr const char* kHeader = "lact rates 1\n";
constexpr uint64_t kMaxFileBytes = 1 << 20;  // a larger file is not this cache's
constexpr size_t kMaxEntries = 2000;         // past it the file starts again (a few dozen per machine are usual)

bool usable_key(const std::string& key) {
  if (key.empty() || key.size() > 512) return false;
  for (const char c : key)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

RateCache::RateCache(std::string path) : path_(std::move(path)) {}

std::string RateCache::default_path() {
  // An unset, empty or relative XDG_CACHE_HOME is ignored, as the specification says.
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/lact/rates.txt";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/lact/rates.txt";
  return "";
}

std::map<std::string, double> RateCache::parse(const std::string& text) {
  std::map<std::string, double> values;
  if (text.compare(0, std::string(kHeader).size(), kHeader) != 0) return values;
  std::istringstream lines(text.substr(std::string(kHeader).size()));
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) continue;
    char* end = nullptr;
    const std::string number = line.substr(0, tab);
    const double value = std::strtod(number.c_str(), &end);
    const std::string key = line.substr(tab + 1);
    if (end != number.c_str() + number.size() || !std::isfinite(value) || value <= 0 || !usable_key(key)) continue;
    values[key] = value;
  }
  return values;
}

std::string RateCache::format(const std::map<std::string, double>& values) {
  std::string text = kHeader;
  char number[32];
  for (const auto& [key, value] : values) {
    std::snprintf(number, sizeof number, "%.6g\t", value);
    text += number + key + "\n";
  }
  return text;
}

std::map<std::string, double> RateCache::read_file() const {
  if (path_.empty()) return {};
  std::error_code missing;
  if (!std::filesystem::exists(path_, missing)) return {};
  try {
    return parse(read_whole_file(path_, kMaxFileBytes));
  } catch (const std::exception&) {  // unreadable, not a regular file, too large: not a cache to use
    return {};
  }
}

double RateCache::find(const std::string& key) {
  if (!read_) values_ = read_file(), read_ = true;
  const auto found = values_.find(key);
  return found == values_.end() ? 0.0 : found->second;
}

void RateCache::keep(const std::map<std::string, double>& values) {
  std::map<std::string, double> merged = read_file();
  if (merged.size() + values.size() > kMaxEntries) merged.clear();
  for (const auto& [key, value] : values)
    if (usable_key(key) && std::isfinite(value) && value > 0) merged[key] = value;
  values_ = merged, read_ = true;
  if (path_.empty()) return;
  try {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ignored);
    write_file_atomically(path_, format(merged));
  } catch (const std::exception&) {  // a read-only home, a full disk: the rates are measured again next time
  }
}

}  // namespace lact
