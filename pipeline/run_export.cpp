// Run::export_path: the viewer's recorded path rendered through the Run, as `lact render --path` renders one.
#include <filesystem>

#include "datasets/camera_path_io.h"
#include "pipeline/output_ownership.h"
#include "pipeline/run.h"
#include "pipeline/run_work.h"

namespace lact {

namespace {

// The files an export writes, relative to its folder: path.json, the frames, path.mp4 with a video.
std::vector<std::string> export_names(size_t frames, const OutputOptions& options, bool video) {
  std::vector<std::string> names = path_frame_names(frames, options);
  names.insert(names.begin(), "path.json");
  if (video) names.push_back("path.mp4");
  return names;
}

// Besides the files lact marks: the path.json lact writes, and whatever this viewer session wrote itself (a video
// carries no mark, so its own earlier path.mp4 is the only one exported over without --force).
ReplaceRule export_rule(const PathExport& where) {
  ReplaceRule rule;
  rule.also_ours = [&where](const std::string& path) {
    if (std::filesystem::path(path).filename() == "path.json" && is_lact_camera_path(path)) return true;
    return where.session_wrote && where.session_wrote(path);
  };
  rule.remedy = "type another folder to export to, or start lact view with --force to replace it";
  return rule;
}

}  // namespace

std::string Run::export_path(const SceneState& state, const std::vector<Camera>& frames, const PathExport& where) {
  OutputOptions options;
  options.folder = where.folder;
  options.quiet = true;
  options.force = where.force;
  RunOutput out(options);
  // Locked while exporting (a lact render into the same folder is refused). It writes no report: a report.json
  // there that lact did not write is left alone, so it is not refused either.
  out.folder.claim(true);
  check_ours_to_replace(out, export_names(frames.size(), options, where.video), export_rule(where));
  const std::string file = out.folder.file("path.json", out.inputs);
  MemoryNeed need;
  add_frame_sizes(frames, file, need);
  check_memory(need);
  write_camera_path(file, frames, where.world ? &*where.world : nullptr);
  const std::string mp4 = where.video ? out.folder.file("path.mp4", out.inputs) : std::string();
  render_frames(model(), state, file, frames, mp4, where.fps, out);
  return file;
}

}  // namespace lact
