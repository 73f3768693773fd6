#include "session/typed_outputs.h"

#include <sys/stat.h>

#include <filesystem>

#include "pipeline/evaluate.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact::session {

namespace fs = std::filesystem;

namespace {

// `file`'s identity and what it looks like now (links followed); false when it cannot be read.
bool stat_file(const std::string& file, std::pair<uint64_t, uint64_t>& identity, int64_t& size, timespec& modified) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) return false;
  identity = {info.st_dev, info.st_ino};
  size = info.st_size;
  modified = info.st_mtim;
  return true;
}

}  // namespace

std::vector<std::string> screenshot_files(const std::string& path) {
  fs::path stem(path);
  if (stem.extension() == ".png") stem.replace_extension();
  return {stem.string() + ".png", stem.string() + ".view.png", stem.string() + ".json"};
}

void check_screenshot_name(const std::string& path, const std::string& field) {
  const fs::path name = fs::path(path).filename();
  if (name.empty() || name == "." || name == "..")
    throw Error(field, "'" + path + "' names a folder, not a screenshot file (add a file name, such as shot.png)");
}

InputFiles session_inputs(const SceneSource& source) {
  InputFiles inputs;
  for (const std::string& file : {source.model_path, source.state_path, source.lpips_path}) inputs.add(file);
  add_scene_inputs(source.selection, inputs);
  return inputs;
}

void TypedOutputs::check_screenshot(const std::string& path) const {
  if (path.empty()) throw Error("screenshot", "empty file name");
  check_screenshot_name(path, "screenshot");
  for (const std::string& file : screenshot_files(path)) check(file, "screenshot", true);  // all before any write
}

void TypedOutputs::check_path_file(const std::string& file) const { check(file, "path file", false); }

void TypedOutputs::check(const std::string& file, const std::string& field, bool create_folder) const {
  const std::string resolved = resolve_named_output(file, field, inputs_);
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(resolved, ec));
  // Saving a camera path again under its name: the file this session wrote there is its own to replace.
  const bool own = exists && wrote_unchanged(resolved);
  // The window's own wording: the command line's "pass --force" means restarting the viewer here.
  if (!force_ && exists && !own)
    throw Error(field, "'" + file + "' exists (type another name, or start lact view with --force to replace it)");
  // The rest as on the command line: the folder, and (without --force) a commit that never replaces a file that
  // appears between this check and the write.
  check_named_output(file, field, force_ || own, inputs_, create_folder);
  // The check before this session's first write there made the path one whose commit never replaces a file.
  if (own) allow_replacing(resolved);
}

void TypedOutputs::wrote(const std::string& file) {
  std::pair<uint64_t, uint64_t> identity;
  int64_t size = 0;
  timespec modified{};
  if (stat_file(file, identity, size, modified)) written_[identity] = {size, modified.tv_sec, modified.tv_nsec};
}

// The same file (device and inode) as one this session wrote, with the size and modification time it left.
bool TypedOutputs::wrote_unchanged(const std::string& file) const {
  std::pair<uint64_t, uint64_t> identity;
  int64_t size = 0;
  timespec modified{};
  if (!stat_file(file, identity, size, modified)) return false;
  const auto it = written_.find(identity);
  return it != written_.end() && it->second == Written{size, modified.tv_sec, modified.tv_nsec};
}

}  // namespace lact::session
