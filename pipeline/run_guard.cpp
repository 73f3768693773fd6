// What a Run says about its work: the guard rails' warnings (pipeline/guard_rails.h) before the work and the
// baseline's after the render, and the line naming each scene's working size, input views and output folder.
#include <cstdio>

#include "pipeline/run.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact {

std::vector<std::string> Run::check_guard_rails(const SceneSelection& selection, bool print) const {
  if (warnings_ == WarningMode::Off) return {};
  const std::vector<std::string> warnings = selection_warnings(model().weights(), selection);
  say_warnings(warnings, print);
  return warnings;
}

void Run::say_warnings(const std::vector<std::string>& warnings, bool print) const {
  if (warnings_ == WarningMode::Error && !warnings.empty()) throw Error(warnings[0] + " (refused: --warnings error)");
  if (!print || warnings_ != WarningMode::On) return;
  // Across ranks, each rank says the warnings of the scenes it evaluates alone: named by its rank.
  const std::string rank = ranks() > 1 ? distribution().ranks->label() : "";
  for (const std::string& w : warnings)
    std::fprintf(stderr, "lact: %swarning: %s\n", rank.c_str(), terminal_text(w).c_str());
}

void Run::check_baselines(Report& report) const {
  if (warnings_ == WarningMode::Off) return;
  for (SceneReport& scene : report.scenes) {
    const std::string warning = baseline_warning(scene);
    if (warning.empty()) continue;
    scene.warnings.push_back(warning);
    // Under --warnings error the report is written first, then write_report refuses with it.
    if (warnings_ == WarningMode::On && leads())
      std::fprintf(stderr, "lact: warning: %s\n", terminal_text(warning).c_str());
  }
}

namespace {

// Why the inputs are these: the state's, the model's default, or --inputs (its spec when it is not the list).
std::string inputs_reason(const SceneRequest& r, const std::string& listed) {
  if (!r.state.empty()) return "the state's";
  if (r.data.model_inputs) return "the model's " + r.data.inputs;
  return r.data.inputs == listed ? "--inputs" : "--inputs " + r.data.inputs;
}

}  // namespace

void Run::announce(const SceneSelection& s, const std::string& work, const std::string& folder,
                   const SceneRequest& r) const {
  if (!leads()) return;
  const std::string listed = views_text(s.inputs);
  std::printf("%s: %dx%d (%s), inputs %s (%s), %s -> %s\n", terminal_text(s.scene.name).c_str(), s.height, s.width,
              terminal_text(s.size_rule).c_str(), listed.c_str(), terminal_text(inputs_reason(r, listed)).c_str(),
              work.c_str(), terminal_text(folder).c_str());
  std::fflush(stdout);
}

void Run::announce_scenes(size_t scenes, const SceneRequest& r) const {
  if (!leads()) return;
  const DataOptions& d = r.data;
  const std::string size = d.size.first ? "--size " + std::to_string(d.size.first) + "x" + std::to_string(d.size.second)
                           : d.trained_height > 0
                               ? "the model's " + std::to_string(d.trained_height) + "x" +
                                     std::to_string(d.trained_width) + " pixel count at each scene's aspect"
                               : "its views' own size";
  std::printf("%zu scenes: each at %s, inputs %s%s of each, results -> %s/<scene>\n", scenes,
              terminal_text(size).c_str(), terminal_text(d.inputs).c_str(), d.model_inputs ? " (the model's)" : "",
              terminal_text(out_.folder.root()).c_str());
  std::fflush(stdout);
}

}  // namespace lact
