#include "session/typed_outputs.h"

#include <filesystem>

#include "pipeline/evaluate.h"
#include "system/error.h"
#include "system/file_io.h"

namespace lact::session {

namespace fs = std::filesystem;

std::vector<std::string> screenshot_files(const std::string& path) {
  fs::path stem(path);
  if (stem.extension() == ".png") stem.replace_extension();
  return {stem.string() + ".png", stem.string() + ".view.png", stem.string() + ".json"};
}

InputFiles session_inputs(const SceneSource& source) {
  InputFiles inputs;
  for (const std::string& file : {source.model_path, source.state_path, source.lpips_path}) inputs.add(file);
  add_scene_inputs(source.selection, inputs);
  return inputs;
}

void TypedOutputs::check_screenshot(const std::string& path) const {
  if (path.empty()) throw Error("screenshot", "empty file name");
  for (const std::string& file : screenshot_files(path)) check(file, "screenshot", true);  // all before any write
}

void TypedOutputs::check_path_file(const std::string& file) const { check(file, "path file", false); }

void TypedOutputs::check(const std::string& file, const std::string& field, bool create_folder) const {
  if (file.empty()) throw Error(field, "empty file name");
  std::string resolved;
  try {
    resolved = resolve_output_path(file);  // a link as its target; /dev, /proc, /sys refused
  } catch (const Error& e) {
    throw Error(field, e.what());
  }
  inputs_.check_not_input(resolved, field);  // before "exists": an input is refused even with --force
  std::error_code ec;
  // The window's own wording: the command line's "pass --force" means restarting the viewer here.
  if (!force_ && fs::exists(fs::symlink_status(resolved, ec)))
    throw Error(field, "'" + file + "' exists (type another name, or start lact view with --force to replace it)");
  // The rest as on the command line: the folder, and (without --force) a commit that never replaces a file that
  // appears between this check and the write.
  check_named_output(file, field, force_, inputs_, create_folder);
}

}  // namespace lact::session
