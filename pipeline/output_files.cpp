#include "pipeline/output_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

// The nearest folder of `path` that exists (itself when it is one).
fs::path existing_ancestor(fs::path path) {
  std::error_code ec;
  path = fs::absolute(path, ec).lexically_normal();
  while (!path.empty() && !fs::exists(path, ec) && path != path.root_path()) path = path.parent_path();
  return path;
}

}  // namespace

void InputFiles::add(const std::string& path) {
  struct stat info {};
  if (!path.empty() && ::stat(path.c_str(), &info) == 0) files_.emplace(std::make_pair(info.st_dev, info.st_ino), path);
}

void InputFiles::check_not_input(const std::string& path, const std::string& what) const {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return;
  auto it = files_.find({info.st_dev, info.st_ino});
  if (it != files_.end())
    throw Error(what, "'" + path + "' is one of this run's inputs (" + it->second + "): refusing to overwrite it");
}

void check_named_output(const std::string& path, const std::string& flag, bool force, const InputFiles& inputs,
                        bool create_folder) {
  if (path.empty()) throw Error(flag, "empty file name");
  std::error_code ec;
  inputs.check_not_input(path, flag);
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) throw Error(flag, "'" + path + "' is a folder, not a file name");
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw Error(flag, "'" + path + "' exists and is not a regular file");
  if (fs::exists(status) && !force) throw Error(flag, "'" + path + "' exists (pass --force to replace it)");
  const fs::path folder = fs::absolute(path, ec).parent_path();
  if (!create_folder && !fs::is_directory(folder, ec))
    throw Error(flag, "cannot write '" + path + "': folder " + folder.string() + " does not exist");
  const fs::path ancestor = existing_ancestor(folder);
  if (!fs::is_directory(ancestor, ec) || ::access(ancestor.c_str(), W_OK | X_OK) != 0)
    throw Error(flag, "cannot write '" + path + "' (" + ancestor.string() + " is not a writable folder)");
}

void make_parent_folder(const std::string& path) {
  std::error_code ec;
  const fs::path folder = fs::absolute(path, ec).parent_path();
  fs::create_directories(folder, ec);
  if (ec) throw Error(path, "cannot create its folder (" + ec.message() + ")");
}

std::string safe_folder_name(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '/' || c == '\\')
      out.push_back('_');
    else
      out.push_back(c);
    if (out.size() >= 80) break;
  }
  // No leading dots (".", "..", hidden files) and no trailing spaces or dots (invisible, or odd on other systems).
  size_t first = out.find_first_not_of('.');
  out = first == std::string::npos ? "" : out.substr(first);
  while (!out.empty() && (out.back() == ' ' || out.back() == '.')) out.pop_back();
  return out.empty() ? "scene" : out;
}

OutputFolder::OutputFolder(std::string root) : root_(std::move(root)) {
  if (root_.empty()) throw Error("--out", "empty folder name");
}

void OutputFolder::check_writable() const {
  std::error_code ec;
  const fs::file_status status = fs::status(root_, ec);
  if (fs::exists(status) && !fs::is_directory(status)) throw Error(root_, "output folder exists and is not a folder");
  const fs::path ancestor = existing_ancestor(root_);
  if (!fs::is_directory(ancestor, ec))
    throw Error(root_, "output folder cannot be created (" + ancestor.string() + " is not a folder)");
  if (::access(ancestor.c_str(), W_OK | X_OK) != 0)
    throw Error(root_, "output folder cannot be created or written (" + ancestor.string() + " is not writable)");
}

std::string OutputFolder::scene_folder(const std::string& name) {
  const std::string base = safe_folder_name(name);
  std::string folder = base;
  for (int n = 2; used_.count(folder); ++n) folder = base + "-" + std::to_string(n);
  used_.insert(folder);
  return folder;
}

std::string OutputFolder::file(const std::string& relative, const InputFiles& inputs) const {
  const fs::path root = fs::path(root_).lexically_normal();
  const fs::path full = (root / relative).lexically_normal();
  const fs::path inside = full.lexically_relative(root);
  if (fs::path(relative).is_absolute() || inside.empty() || *inside.begin() == "..")
    throw Error(root_, "output '" + relative + "' would be written outside the output folder (refused)");
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  if (ec) throw Error(full.parent_path().string(), "cannot create output folder (" + ec.message() + ")");
  inputs.check_not_input(full.string(), "--out");
  return full.string();
}

std::string csv_field(const std::string& text) {
  std::string value = text;
  if (!value.empty() && (value[0] == '=' || value[0] == '+' || value[0] == '-' || value[0] == '@' || value[0] == '\t' ||
                         value[0] == '\r'))
    value = "'" + value;
  if (value.find_first_of(",\"\r\n") == std::string::npos) return value;
  std::string quoted = "\"";
  for (const char c : value) {
    if (c == '"') quoted.push_back('"');
    quoted.push_back(c);
  }
  return quoted + "\"";
}

}  // namespace lact
