// What a viewing session is asked to open, whichever front end shows it (`lact view`'s window, `lact serve`'s
// browser page): the model, the scene (as render's flags) or a saved state, the test views and the start view.
#pragma once

#include <string>

#include "pipeline/backend_options.h"
#include "pipeline/scene_selection.h"

namespace lact::session {

struct SceneOptions {
  CommonOptions common;
  DataOptions data;
  std::string model, state;
  std::string targets = "rest";  // the test views (measured against their ground truth; snapped to)
  int render_threads = 0;        // 0: 1 for views under ~1 GFLOP (threads cost more than they save there,
                                 // beside a front end on the same cores), else common.threads
  // LPIPS on test views: these weights; empty: those `lact model fetch lpips` cached, when there are any.
  std::string lpips;
  bool no_lpips = false;  // --no-lpips: not measured although cached
  int camera = -1;        // start snapped on this scene view
  // The flag or command named when neither --inputs nor --state is given ("view", "serve").
  std::string command = "view";
};

}  // namespace lact::session
