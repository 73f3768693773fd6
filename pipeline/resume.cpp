#include "pipeline/resume.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "pipeline/output_ownership.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kLargestReport = 256u << 20;

// True for the names render_and_measure gives a view's images: <index>.png, <index>_gt.png, <index>_diff.png,
// <index>.npy.
bool is_view_image_name(const std::string& name) {
  size_t digits = 0;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
  if (digits == 0) return false;
  const std::string rest = name.substr(digits);
  return rest == ".png" || rest == "_gt.png" || rest == "_diff.png" || rest == ".npy";
}

// A scene folder named in a report: one plain name inside --out (a report is a file a user could edit).
bool is_plain_folder_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

void read_resume_block(const nlohmann::json& resume, PreviousRun& previous) {
  previous.digest = resume.at("digest").get<std::string>();
  previous.header = resume.at("header");
  for (const nlohmann::json& scene : resume.at("done")) previous.done.push_back(scene_report_from_json(scene));
  for (const nlohmann::json& scene : resume.at("pending")) previous.folders.push_back(scene.at("folder"));
}

// "frame_0012.json" -> "frame_0012": the name render_frames gives a path frame's camera (4 or more digits).
std::string frame_stem(const std::string& name) {
  const std::string prefix = "frame_", suffix = ".json";
  if (name.size() < prefix.size() + 4 + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  return name.substr(0, name.size() - suffix.size());
}

void remove_regular_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec))) return;  // absent, or a link: not followed
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw Error(path.string(), "cannot remove the previous run's frame (" + std::string(std::strerror(errno)) + ")");
}

}  // namespace

void remove_previous_frames(const RunOutput& out) {
  std::vector<fs::path> files;  // decided before any is removed: an .npy is lact's by the PNG beside it
  std::error_code ec;
  for (fs::directory_iterator it(out.folder.root(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string stem = frame_stem(it->path().filename().string());
    if (stem.empty() || !is_frame_camera(it->path().string())) continue;
    for (const char* suffix : {".npy", ".png"}) {  // the camera last: a frame interrupted here is found next time
      const fs::path file = fs::path(out.folder.root()) / (stem + suffix);
      if (is_lact_output(file.string())) files.push_back(file);
    }
    files.push_back(it->path());
  }
  for (const fs::path& file : files) remove_regular_file(file);
}

PreviousRun read_previous_run(const RunOutput& out) {
  PreviousRun previous;
  const std::string path = (fs::path(out.folder.root()) / "report.json").string();
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return previous;
  const nlohmann::json j = nlohmann::json::parse(read_whole_file(path, kLargestReport), nullptr, false);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>().rfind("lact report", 0) != 0)
    return previous;  // not lact's (claim() refused it unless --force): nothing of it is touched
  previous.found = true;
  try {
    for (const nlohmann::json& scene : j.at("scenes")) previous.folders.push_back(scene.at("folder"));
    for (const nlohmann::json& f : j.value("failed", nlohmann::json::array()))
      previous.failed.emplace_back(f.at("scene").get<std::string>(), f.at("error").get<std::string>());
    previous.complete = j.value("complete", true);
    if (!previous.complete) read_resume_block(j.at("resume"), previous);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path, std::string("is a lact report that cannot be read back (") + e.what() + ")");
  }
  return previous;
}

void remove_previous_images(const PreviousRun& previous, const RunOutput& out) {
  std::set<std::string> folders(previous.folders.begin(), previous.folders.end());
  for (const std::string& folder : folders) {
    if (!is_plain_folder_name(folder)) continue;
    const fs::path path = fs::path(out.folder.root()) / folder;
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(path, ec))) continue;  // a link is not followed
    std::vector<fs::path> images;  // decided before any is removed: an .npy is lact's by the PNG beside it
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (is_view_image_name(it->path().filename().string()) && is_lact_output(it->path().string()))
        images.push_back(it->path());
    for (const fs::path& image : images)
      if (::unlink(image.c_str()) != 0 && errno != ENOENT)
        throw Error(image.string(),
                    "cannot remove the previous run's image (" + std::string(std::strerror(errno)) + ")");
    ::rmdir(path.c_str());  // only when nothing else is left in it
  }
}

std::string resume_digest(const RunDigest& command_line, const std::string& model, const std::string& lpips,
                          const std::vector<const Scene*>& scenes) {
  static const std::set<std::string> kNotResults = {"--resume", "--force", "--max-seconds", "--out"};
  RunDigest digest;
  for (const RunDigest::Field& field : command_line.fields()) {
    if (kNotResults.count(field.name)) continue;
    digest.add(field.name, field.hash);
    digest.show_last_as(field.shown);
  }
  digest.add_file("the model (its content)", model);
  if (lpips.empty()) {
    digest.add("the LPIPS weights", "none");
  } else {
    digest.add_file("the LPIPS weights (their content)", lpips);
    digest.show_last_as(lpips);
  }
  for (const Scene* scene : scenes) {
    digest.add("the scenes", scene->name);
    // Named without the path: the same index given as another spelling (relative, from another folder) or
    // moved resumes; its content decides.
    digest.add_file("the cameras of scene '" + scene->name + "'", scene->source);
    digest.show_last_as(scene->source);
  }
  return digest.encode();
}

void check_resumable(const PreviousRun& previous, const std::string& digest, const std::string& report_path) {
  if (!previous.found)
    throw Error("--resume",
                "no report.json of an interrupted lact run in " + fs::path(report_path).parent_path().string());
  if (previous.complete)
    throw Error("--resume",
                report_path + " is complete: nothing is left to resume (run without --resume to start again)");
  const DigestDifference d = first_difference(RunDigest::decode(previous.digest), RunDigest::decode(digest));
  if (!d.name.empty())
    throw Error("--resume", report_path + " was written by a run with " + d.name + " " + d.first +
                                " where this one has " + d.other +
                                ": resume with the same model, flags and inputs (or run without --resume)");
}

std::string interrupted_note(size_t done, size_t total, const std::string& report_path) {
  const std::string counted = "lact: interrupted after " + std::to_string(done) + " of " + std::to_string(total) +
                              (total == 1 ? " scene" : " scenes");
  if (done == 0) return counted + ": none was finished, nothing kept\n";
  return counted + ": " + report_path +
         " keeps them, marked incomplete (the same command with --resume finishes the rest)\n";
}

}  // namespace lact
