// What a session shows, fixed before its front end opens (a window, a server): the model, the scene and its views
// at the working size, which views were inputs and which are test views. Everything here is checked up front, so
// a bad flag, file or model ends with the usual one-line error before any window appears or port is bound.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model.h"
#include "datasets/camera_path_io.h"
#include "pipeline/run.h"
#include "pipeline/scene_selection.h"
#include "session/scene_options.h"

namespace lact::session {

struct SceneSource {
  // The backend and the model (one process); renders the novel views. Shared by the scenes of one `lact serve`
  // (open_scene_source's `shared`): used under run->exclusive() from worker threads.
  std::shared_ptr<Run> run;
  const Model* model = nullptr;  // run's
  std::string model_path;
  std::string state_path;  // set: open this encoded state instead of encoding
  SceneSelection selection;
  std::vector<Camera> cameras;  // every view of the scene at the working size, pose transform applied
  std::vector<int> targets;     // test views (selection.inputs are the inputs)
  int height = 0, width = 0;    // working size
  // The guard rails' warnings (pipeline/guard_rails.h), as lact render words them: the working size against the
  // model's training size, the input cameras' layout and distances. Printed on stderr when the scene opens; the
  // front ends show them too (the viewer's panel, lact serve's page).
  std::vector<std::string> warnings;
  std::string lpips_path;  // the LPIPS weights test views are measured with (run->lpips()); empty: none

  int views() const { return static_cast<int>(cameras.size()); }
  bool is_input(int view) const;
  bool is_target(int view) const;
  const char* role(int view) const;  // "input", "test" or "view"
  // Inputs and test views in index order: what [ and ] step through.
  std::vector<int> snap_views() const;
  // The start camera: --camera, else the first input, else view 0.
  int start_view(int requested) const;

  // The input view nearest scene view `view` (its photo is the "copy the closest photo" baseline); -1 when
  // `view` is itself an input or there are none.
  int nearest_input(int view) const;

  // The ground truth of scene view `view` at the working size (decodes the image). Thread-safe.
  Image ground_truth(int view) const;
  // The input views with their images (for encoding).
  std::vector<PosedImage> input_view(int index) const;
};

// Throws Error for anything wrong (flags, data, model, --camera out of range). `shared`: this Run (its model
// loaded once: the model the options name must be the one it holds; its LPIPS weights likewise) instead of a new
// one. `read`: the scene of --data, read already (one of an index's many), instead of reading --data again.
SceneSource open_scene_source(const SceneOptions& options, std::shared_ptr<Run> shared = nullptr,
                              const Scene* read = nullptr);

// The world the session's cameras are in (the state's pose normalisation, else --normalize-poses'), as
// `lact render` takes it: what a camera path saved in the session records and what one loaded into it must match.
// Its made_by is kViewerPathMaker.
PathFrame cameras_frame(const SceneSource& source);

// The render thread's OpenMP threads: `options.render_threads`, else 1 for views under ~1 GFLOP, else --threads.
int render_threads(const SceneOptions& options, const SceneSource& source);

}  // namespace lact::session
