#include "datasets/missing_image.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace lact {

namespace fs = std::filesystem;

namespace {

// Names in a large folder are compared up to this many: the hint is worth a glance, not a long scan.
constexpr int kMaxEntriesLooked = 100000;

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A file in `folder` whose name is `name` but for letter case.
std::string same_but_case(const fs::path& folder, const std::string& name) {
  std::error_code ec;
  fs::directory_iterator it(folder, ec), end;
  const std::string wanted = lowered(name);
  for (int looked = 0; !ec && it != end && looked < kMaxEntriesLooked; it.increment(ec), ++looked)
    if (lowered(it->path().filename().string()) == wanted) return it->path().filename().string();
  return "";
}

// images_2, images_4 or images_8 beside a missing `images` folder.
int downscaled_copy(const fs::path& folder) {
  std::error_code ec;
  for (int n : {2, 4, 8})
    if (fs::is_directory(folder.parent_path() / (folder.filename().string() + "_" + std::to_string(n)), ec)) return n;
  return 0;
}

}  // namespace

std::string missing_image_hint(const std::string& path) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) return "";
  if (path.find('\\') != std::string::npos)
    return " (the name holds backslashes: a Windows path? lact reads / between folders)";
  const fs::path file(path), folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (fs::is_directory(folder, ec)) {
    const std::string other = same_but_case(folder, file.filename().string());
    return other.empty() ? "" : " (there is " + other + ": the names differ in letter case)";
  }
  if (const int n = downscaled_copy(folder))
    return " (no folder " + folder.filename().string() + "/, but " + folder.filename().string() + "_" +
           std::to_string(n) + "/ is there: pass --downscale " + std::to_string(n) + ")";
  return " (its folder " + folder.string() + " is not there)";
}

MissingImages find_missing_images(const std::vector<std::string>& paths) {
  MissingImages missing;
  std::error_code ec;
  for (const std::string& path : paths) {
    if (fs::exists(fs::symlink_status(path, ec))) continue;
    if (missing.count++ == 0) missing.first = path, missing.hint = missing_image_hint(path);
  }
  return missing;
}

}  // namespace lact
