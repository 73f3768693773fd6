#include "pipeline/stage_progress.h"

#include <algorithm>

namespace lact {

namespace {

// One bar at a time: a new one when the stage changes or starts again from 0, gone when its stage is done.
struct StageBars {
  std::unique_ptr<Progress> bar;
  std::string stage;
  void update(const char* stage_name, int done, int total) {
    if (!bar || done == 0 || stage != stage_name) {
      bar.reset();  // its line cleared first
      stage = stage_name;
      bar = std::make_unique<Progress>(stage, total, false, true);
    }
    if (done) bar->set(done, "");
    if (done >= total) bar.reset();
  }
};

}  // namespace

Model::WorkProgress stage_progress_bars(bool quiet) {
  if (!Progress::shown(quiet)) return {};
  auto bars = std::make_shared<StageBars>();
  return [bars](const char* stage, int done, int total) { bars->update(stage, done, total); };
}

Model::WorkProgress batched_render_progress(Model::WorkProgress bars, size_t views) {
  if (!bars) return {};
  auto finished = std::make_shared<int>(0);  // views of the calls before this one
  return [bars, finished, views](const char* stage, int done, int total) {
    if (std::string(stage) != "render views") return bars(stage, done, total);
    if (done == 0 && *finished > 0) return;  // a later call starting: the bar goes on
    bars(stage, std::min(*finished + done, static_cast<int>(views)), static_cast<int>(views));
    if (done >= total) *finished += total;
  };
}

}  // namespace lact
