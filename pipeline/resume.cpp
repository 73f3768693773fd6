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
#include "system/output_files.h"
#include "system/terminal_text.h"

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
  if (resume.contains("partial")) previous.partial = scene_report_from_json(resume.at("partial"));
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

// The report at `path` when lact wrote it (its `format`), else null: none there, a link, or another program's.
nlohmann::json lact_report_at(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return nullptr;
  nlohmann::json j = nlohmann::json::parse(read_whole_file(path, kLargestReport), nullptr, false);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>().rfind("lact report", 0) != 0)
    return nullptr;
  return j;
}

// "report-rank-1-of-3.json" -> "3": the number of ranks of the launch that wrote it (a name read_rank_records
// took, so well formed).
std::string record_ranks(const std::string& name) {
  const size_t of = name.rfind("-of-") + 4;
  return name.substr(of, name.size() - of - std::string(".json").size());
}

// The ranks' progress records beside report.json (an evaluation across ranks interrupted): their paths and
// every folder they name, so that a new run removes them with their images.
void read_rank_records(const RunOutput& out, PreviousRun& previous) {
  std::error_code ec;
  for (fs::directory_iterator it(out.folder.root(), ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_rank_record_name(it->path().filename().string())) continue;
    const nlohmann::json j = lact_report_at(it->path().string());
    if (j.is_null()) continue;
    PreviousRun record;
    try {
      for (const nlohmann::json& scene : j.at("scenes")) record.folders.push_back(scene.at("folder"));
      if (!j.value("complete", true)) read_resume_block(j.at("resume"), record);
    } catch (const nlohmann::json::exception& e) {
      throw Error(it->path().string(), std::string("is a lact report that cannot be read back (") + e.what() + ")");
    }
    previous.folders.insert(previous.folders.end(), record.folders.begin(), record.folders.end());
    previous.records.push_back(it->path().string());
  }
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

std::string progress_record_name(bool distributed, int rank, int ranks) {
  if (!distributed) return "report.json";
  return "report-rank-" + std::to_string(rank) + "-of-" + std::to_string(ranks) + ".json";
}

PreviousRun read_previous_run(const RunOutput& out, const std::string& name) {
  PreviousRun previous;
  const std::string path = (fs::path(out.folder.root()) / name).string();
  if (name == "report.json") read_rank_records(out, previous);
  const nlohmann::json j = lact_report_at(path);
  // None, or not lact's (claim() refused it unless --force): not touched. A rank without its own record reads the
  // others', which check_resumable names when they are another launch's.
  if (j.is_null() && name != "report.json") read_rank_records(out, previous);
  if (j.is_null()) return previous;
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
                          const std::vector<const Scene*>& scenes, int ranks, const std::string& state) {
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
  // Only when given: the digests of --data's evaluations stay as their records hold them. Compared by content
  // (the state moved or given by another spelling resumes), shown with its path.
  if (!state.empty()) {
    digest.add_file("--state (its content)", state);
    digest.show_last_as(state);
  }
  if (ranks > 0) digest.add("the ranks", std::to_string(ranks));
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
  const fs::path path(report_path);
  if (!previous.found && !previous.records.empty()) {
    const std::string record = fs::path(previous.records[0]).filename().string();
    throw Error("--resume", path.parent_path().string() + " holds an interrupted run across ranks (" + record +
                                "): resume it with the same launch (mpirun, " + record_ranks(record) + " ranks)");
  }
  if (!previous.found)
    throw Error("--resume",
                "no " + path.filename().string() + " of an interrupted lact run in " + path.parent_path().string());
  if (previous.complete)
    throw Error("--resume",
                report_path + " is complete: nothing is left to resume (run without --resume to start again)");
  const DigestDifference d = first_difference(RunDigest::decode(previous.digest), RunDigest::decode(digest));
  if (!d.name.empty())
    throw Error("--resume", report_path + " was written by a run with " + d.name + " " + d.first +
                                " where this one has " + d.other +
                                ": resume with the same model, flags and inputs (or run without --resume)");
}

std::string interrupted_note(size_t done, size_t total, const std::string& report_path, const SceneReport* partial) {
  std::string counted = "lact: interrupted after " + std::to_string(done) + " of " + std::to_string(total) +
                        (total == 1 ? " scene" : " scenes");
  const bool views = partial && !partial->views.empty();
  if (views)
    counted += " and " + std::to_string(partial->views.size()) + " of " + std::to_string(partial->targets.size()) +
               " views of scene '" + terminal_text(partial->name) + "'";
  if (done == 0 && !views) return counted + ": none was finished, nothing kept\n";
  return counted + ": " + report_path +
         " keeps them, marked incomplete (the same command with --resume finishes the rest)\n";
}

std::vector<ViewReport> views_in_place(const SceneReport& partial, const RunOutput& out) {
  std::vector<ViewReport> kept;
  for (const ViewReport& v : partial.views) {
    bool in_place = std::find(partial.targets.begin(), partial.targets.end(), v.index) != partial.targets.end();
    for (const std::string& name : view_output_names(partial.folder, {v.index}, out.options))
      in_place = in_place && is_lact_output((fs::path(out.folder.root()) / name).string());
    if (in_place) kept.push_back(v);
  }
  return kept;
}

}  // namespace lact
