#include "pipeline/output_ownership.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "datasets/image_io.h"
#include "datasets/json_util.h"
#include "datasets/png_tag.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/output_files.h"

namespace lact {

namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

std::string with_suffix(const std::string& path, const std::string& old_suffix, const std::string& new_suffix) {
  return path.substr(0, path.size() - old_suffix.size()) + new_suffix;
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

// An .npy as write_npy writes it beside a marked PNG of the same size: its bytes before the pixels equal
// npy_prefix(H, W) of the shape it names, and the pixels fill the rest exactly.
bool is_lact_npy(const std::string& path) {
  const std::string png = with_suffix(path, ".npy", ".png");
  int height = 0, width = 0;
  if (!is_lact_png(png) || !read_image_size(png, width, height)) return false;
  struct stat info {};
  const std::string prefix = npy_prefix(height, width);
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<uint64_t>(info.st_size) != prefix.size() + uint64_t{12} * height * width)
    return false;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  std::string head(prefix.size(), '\0');
  return file && std::fread(head.data(), 1, head.size(), file.get()) == head.size() && head == prefix;
}

}  // namespace

bool is_lact_output(const std::string& path) {
  if (ends_with(path, ".png")) return is_lact_png(path);
  if (ends_with(path, ".json")) return is_frame_camera(path);
  if (ends_with(path, ".npy")) return is_lact_npy(path);
  return false;
}

bool is_frame_camera(const std::string& path) {
  static const std::set<std::string> kKeys = {"c2w", "fx", "fy", "cx", "cy", "w", "h"};
  constexpr uint64_t kLargest = 64u << 10;
  const nlohmann::json j = json_of_regular_file(path, kLargest);
  if (!j.is_object() || j.size() != kKeys.size()) return false;
  for (const auto& item : j.items())
    if (!kKeys.count(item.key())) return false;
  return true;
}

std::vector<std::string> view_output_names(const std::string& folder, const std::vector<int>& targets,
                                           const OutputOptions& options) {
  std::vector<std::string> names;
  for (int view : targets) {
    const std::string stem = folder + "/" + std::to_string(view);
    names.push_back(stem + ".png");
    if (options.save_images) names.push_back(stem + "_gt.png"), names.push_back(stem + "_diff.png");
    if (options.save_npy) names.push_back(stem + ".npy");
  }
  return names;
}

std::string path_frame_stem(size_t index) {
  char stem[32];
  std::snprintf(stem, sizeof(stem), "frame_%04zu", index);
  return stem;
}

std::vector<std::string> path_frame_names(size_t frames, const OutputOptions& options) {
  std::vector<std::string> names;
  for (size_t i = 0; i < frames; ++i) {
    const std::string stem = path_frame_stem(i);
    names.push_back(stem + ".png");
    names.push_back(stem + ".json");
    if (options.save_npy) names.push_back(stem + ".npy");
  }
  return names;
}

void check_ours_to_replace(const RunOutput& out, const std::vector<std::string>& names, const ReplaceRule& rule) {
  if (out.options.force) return;
  for (const std::string& name : names) {
    const std::string path = out.folder.root() + "/" + name;
    check_no_link_inside_out(path);  // named for what it is: never written through
    if (exists(path) && !is_lact_output(path) && !(rule.also_ours && rule.also_ours(path)))
      throw Error(path, std::string("exists and is not lact's output") +
                            (ends_with(path, ".png") ? " (lact marks the images it writes): " : ": ") + rule.remedy);
  }
}

}  // namespace lact
