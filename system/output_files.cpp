#include "system/output_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "system/error.h"
#include "system/file_io.h"
#include "system/utf8_text.h"

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

// A descriptor closed when it goes.
struct FileDescriptor {
  explicit FileDescriptor(int f) : fd(f) {}
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
  FileDescriptor(FileDescriptor&& other) : fd(other.fd) { other.fd = -1; }
  FileDescriptor& operator=(FileDescriptor&& other) {
    std::swap(fd, other.fd);
    return *this;
  }
  int fd;
};

const char* const kOutsideRefused = " (refused: lact writes nothing through a link inside --out)";

// The folder `name` inside the open folder `parent` (made when missing: then `made`), opened without following a
// link.
FileDescriptor open_folder_inside(int parent, const std::string& name, const std::string& shown, bool& made) {
  made = ::mkdirat(parent, name.c_str(), 0777) == 0;
  if (!made && errno != EEXIST)
    throw Error(shown, "cannot create output folder (" + std::string(std::strerror(errno)) + ")");
  FileDescriptor folder(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (folder.fd >= 0) return folder;
  const int error = errno;
  struct stat info {};  // O_NOFOLLOW with O_DIRECTORY gives ENOTDIR for a link: ask what it is
  if (::fstatat(parent, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode))
    throw Error(shown, std::string("is a link inside the output folder") + kOutsideRefused);
  if (error == ENOTDIR) throw Error(shown, "is a file inside the output folder where lact needs a folder");
  throw Error(shown, "cannot open output folder (" + std::string(std::strerror(error)) + ")");
}

// Error unless `name` in the open folder `folder` is missing or a regular file (not a link, folder or device).
void check_no_link_at(int folder, const std::string& name, const std::string& shown) {
  struct stat info {};
  if (::fstatat(folder, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) return;  // a new file
  if (S_ISLNK(info.st_mode)) throw Error(shown, std::string("is a link inside the output folder") + kOutsideRefused);
  if (S_ISDIR(info.st_mode)) throw Error(shown, "is a folder inside the output folder where lact writes a file");
  if (!S_ISREG(info.st_mode)) throw Error(shown, "exists inside the output folder and is not a regular file");
}

// The names of the files lact itself writes at the top of --out.
bool is_lacts_own_name(const std::string& name) {
  std::string lower;
  for (const char c : name) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return lower == "report.json" || lower == "report.csv" || is_rank_record_name(lower);
}

// True when `text` is what lact's report writer puts in `name`: the JSON's `format` field, or the CSV's header.
bool written_by_lact(const std::string& name, const std::string& text) {
  if (name == "report.csv") return text.rfind("scene,view,psnr,", 0) == 0;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string()) return false;
  return j["format"].get<std::string>().rfind("lact report", 0) == 0;
}

// A report.json / report.csv in --out is replaced only when lact wrote it, or with --force.
void check_report_is_lacts(const std::string& root, const char* name, bool force) {
  const std::string path = (fs::path(root) / name).string();
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;
  check_no_link_inside_out(path);
  if (!S_ISREG(info.st_mode)) throw Error(path, "exists inside the output folder and is not a regular file");
  if (force) return;
  std::string text;
  try {
    text = read_whole_file(path, 64u << 20);
  } catch (const Error&) {  // unreadable or very large: not one lact can recognise as its own
  }
  if (!written_by_lact(name, text))
    throw Error("--out",
                "'" + path + "' was not written by lact (pass --force to replace it, or choose another folder)");
}

}  // namespace

bool is_rank_record_name(const std::string& name) {
  const std::string prefix = "report-rank-", suffix = ".json";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  const size_t of = middle.find("-of-");
  const auto digits = [](const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return of != std::string::npos && digits(middle.substr(0, of)) && digits(middle.substr(of + 4));
}

void check_no_link_inside_out(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode))
    throw Error(path, std::string("is a link inside the output folder") + kOutsideRefused);
}

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

std::string resolve_named_output(const std::string& path, const std::string& flag, const InputFiles& inputs) {
  if (path.empty()) throw Error(flag, "empty file name");
  std::string resolved;
  try {
    resolved = resolve_output_path(path);  // a link as its target; /dev, /proc, /sys refused
  } catch (const Error& e) {
    throw Error(flag, e.what());
  }
  inputs.check_not_input(resolved, flag);  // before "exists": an input is refused even with --force
  return resolved;
}

void check_named_output(const std::string& path, const std::string& flag, bool force, const InputFiles& inputs,
                        bool create_folder) {
  const std::string resolved = resolve_named_output(path, flag, inputs);
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(resolved, ec));
  if (exists && !force) throw Error(flag, "'" + path + "' exists (pass --force to replace it)");
  const fs::path folder = fs::path(resolved).parent_path();
  if (!create_folder && !fs::is_directory(folder, ec))
    throw Error(flag, "cannot write '" + path + "': folder " + folder.string() + " does not exist");
  const fs::path ancestor = existing_ancestor(folder);
  if (!fs::is_directory(ancestor, ec) || ::access(ancestor.c_str(), W_OK | X_OK) != 0)
    throw Error(flag, "cannot write '" + path + "' (" + ancestor.string() + " is not a writable folder)");
  if (!force) require_new_file(resolved);
}

void make_parent_folder(const std::string& path) {
  std::error_code ec;
  const fs::path folder = fs::absolute(path, ec).parent_path();
  fs::create_directories(folder, ec);
  if (ec) throw Error(path, "cannot create its folder (" + ec.message() + ")");
}

std::string safe_folder_name(const std::string& name) {
  // Bytes that are not UTF-8 first become \xNN (as report.json writes the name), then "\" becomes "_": the
  // folder on disk is valid UTF-8 and reads like the report's `folder`.
  std::string out;
  for (const char c : utf8_escaped(name)) {
    const unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u < 0x20 || u == 0x7f || c == '/' || c == '\\' ? '_' : c);
  }
  // At most 80 bytes, cut on a character boundary (never inside a UTF-8 sequence).
  if (out.size() > 80) {
    size_t cut = 80;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
    out.resize(cut);
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

OutputFolder::~OutputFolder() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // the lock goes with the descriptor
  // Each rmdir fails, as it should, unless the run left that folder empty (a scene whose first write failed).
  for (auto made = made_folders_.rbegin(); made != made_folders_.rend(); ++made) ::rmdir(made->c_str());
  if (made_root_) ::rmdir(root_.c_str());
}

void OutputFolder::check_writable() const {
  check_working_folder_for(root_);
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(root_, ec)) && !fs::exists(root_, ec)) {
    // A loop of links exists but leads nowhere: ELOOP, not "does not exist" (which named a link that is there).
    if (ec) throw Error(root_, "is a link that cannot be followed (" + ec.message() + "): name another --out");
    throw Error(root_, "is a link to " + fs::read_symlink(root_, ec).string() +
                           ", which does not exist: create that folder or name another --out");
  }
  const fs::file_status status = fs::status(root_, ec);
  if (fs::exists(status) && !fs::is_directory(status)) throw Error(root_, "output folder exists and is not a folder");
  if (under_system_folder(root_))
    throw Error("--out", root_ + " is under /dev, /proc or /sys: not a folder lact writes");
  const fs::path ancestor = existing_ancestor(root_);
  if (!fs::is_directory(ancestor, ec))
    throw Error(root_, "output folder cannot be created (" + ancestor.string() + " is not a folder)");
  if (::access(ancestor.c_str(), W_OK | X_OK) != 0)
    throw Error(root_, "output folder cannot be created or written (" + ancestor.string() + " is not writable)");
}

void OutputFolder::claim(bool force) {
  check_writable();
  std::error_code ec;
  if (!fs::exists(root_, ec)) {
    made_root_ = fs::create_directories(root_, ec);
    if (ec) throw Error(root_, "cannot create the output folder (" + ec.message() + ")");
  }
  if (lock_fd_ < 0) lock_fd_ = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0) throw Error(root_, "cannot open the output folder (" + std::string(std::strerror(errno)) + ")");
  // Best effort where a filesystem has no flock (some network mounts): only "held by another" stops the run.
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
    throw Error("--out", root_ + " is in use by another lact run (wait for it to end, or choose another folder)");
  for (const char* name : {"report.json", "report.csv"}) check_report_is_lacts(root_, name, force);
}

namespace {
// The folder for a scene called `name` that none of `used` is; taken into `used`.
std::string take_scene_folder(const std::string& name, std::set<std::string>& used) {
  std::string base = safe_folder_name(name);
  if (is_lacts_own_name(base)) base = "scene-" + base;
  std::string folder = base;
  for (int n = 2; used.count(folder); ++n) folder = base + "-" + std::to_string(n);
  used.insert(folder);
  return folder;
}
}  // namespace

std::string OutputFolder::scene_folder(const std::string& name) { return take_scene_folder(name, used_); }

std::vector<std::string> OutputFolder::next_scene_folders(const std::vector<std::string>& names) const {
  std::set<std::string> used = used_;
  std::vector<std::string> folders;
  for (const std::string& name : names) folders.push_back(take_scene_folder(name, used));
  return folders;
}

std::string OutputFolder::file(const std::string& relative, const InputFiles& inputs) const {
  const fs::path root = fs::path(root_).lexically_normal();
  const fs::path full = (root / relative).lexically_normal();
  const fs::path inside = full.lexically_relative(root);
  if (fs::path(relative).is_absolute() || inside.empty() || *inside.begin() == ".." || *inside.begin() == ".")
    throw Error(root_, "output '" + relative + "' would be written outside the output folder (refused)");
  std::error_code ec;
  fs::create_directories(root, ec);  // the root is the user's choice: a link there is followed
  if (ec) throw Error(root_, "cannot create output folder (" + ec.message() + ")");
  FileDescriptor folder(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (folder.fd < 0) throw Error(root_, "cannot open output folder (" + std::string(std::strerror(errno)) + ")");
  fs::path walked = root;
  for (const fs::path& part : inside.parent_path()) {
    walked /= part;
    bool made = false;
    folder = open_folder_inside(folder.fd, part.string(), walked.string(), made);
    if (made) {
      std::lock_guard<std::mutex> lock(made_folders_mutex_);
      made_folders_.push_back(walked.string());
    }
  }
  check_no_link_at(folder.fd, full.filename().string(), full.string());
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
