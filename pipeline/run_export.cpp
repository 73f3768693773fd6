// Run::export_path: the viewer's recorded path rendered through the Run, as `lact render --path` renders one.
#include "datasets/camera_path_io.h"
#include "pipeline/run.h"
#include "pipeline/run_work.h"

namespace lact {

std::string Run::export_path(const SceneState& state, const std::vector<Camera>& frames, const std::string& folder,
                             bool video, int fps) {
  OutputOptions options;
  options.folder = folder;
  options.quiet = true;
  RunOutput out(options);  // the export folder holds the viewer's own outputs: replaced freely
  out.folder.claim(true);  // locked while exporting: a lact render into the same folder is refused
  const std::string file = out.folder.file("path.json", out.inputs);
  MemoryNeed need;
  add_frame_sizes(frames, file, need);
  check_memory(need);
  write_camera_path(file, frames);
  const std::string mp4 = video ? out.folder.file("path.mp4", out.inputs) : std::string();
  render_frames(model(), state, file, frames, mp4, fps, out);
  return file;
}

}  // namespace lact
