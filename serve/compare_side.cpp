#include "serve/compare_side.h"

#include <cstdio>
#include <filesystem>

#include "system/error.h"
#include "system/terminal_text.h"
#include "system/utf8_text.h"

namespace fs = std::filesystem;

namespace lact::serve {

namespace {

std::string size_text(const session::SceneSource& s) {
  return std::to_string(s.views()) + " views at " + std::to_string(s.height) + "x" + std::to_string(s.width);
}

}  // namespace

std::unique_ptr<session::SceneSource> open_compare_source(const ServeOptions& o, const session::SceneSource& main) {
  if (o.compare_model.empty() && o.compare_state.empty()) return nullptr;
  if (!o.compare_model.empty() && !o.compare_state.empty())
    throw Error("--compare-model", "give --compare-model or --compare-state, not both (two sides: a and b)");
  const bool by_model = !o.compare_model.empty();
  const std::string flag = by_model ? "--compare-model" : "--compare-state";
  const std::string file = by_model ? o.compare_model : o.compare_state;
  std::error_code error;
  if (!fs::is_regular_file(file, error))
    throw Error(flag, "'" + file + "': " + (fs::exists(file, error) ? "not a regular file" : "no such file"));
  session::SceneOptions side = o;  // the same scene flags
  if (by_model) {
    side.model = o.compare_model;  // with --state: its scene and inputs, encoded again by this model
  } else {
    side.state = o.compare_state;
    side.model.clear();  // the model the state recorded
  }
  std::unique_ptr<session::SceneSource> b;
  try {
    b = std::make_unique<session::SceneSource>(session::open_scene_source(side));
  } catch (const std::exception& e) {
    throw Error(flag, e.what());
  }
  if (by_model) b->state_path.clear();  // encoded from the inputs, not loaded: a state belongs to its model
  if (b->views() != main.views() || b->width != main.width || b->height != main.height)
    throw Error(flag, "'" + file + "' has " + size_text(*b) + ", the served scene " + size_text(main) +
                          ": not the same scene (compare two encodings of one scene)");
  return b;
}

nlohmann::json side_names(const session::SceneSource& s) {
  const auto name = [](const std::string& path) { return utf8_escaped(fs::path(path).filename().string()); };
  return {{"model", name(s.model_path)},
          {"state", s.state_path.empty() ? nlohmann::json() : nlohmann::json(name(s.state_path))}};
}

CompareSide::CompareSide(std::unique_ptr<session::SceneSource> source, const ServeOptions& options, Post post,
                         std::function<void(const std::string&)> failed, Deliver deliver)
    : source_(std::move(source)), failed_(std::move(failed)) {
  engine_ = std::make_unique<SceneEngine>(*source_, options.common.threads, session::render_threads(options, *source_),
                                          std::move(post), std::move(deliver), [this] { changed(); });
}

nlohmann::json CompareSide::describe() const {
  nlohmann::json out = side_names(*source_);
  out["side"] = "b";
  const nlohmann::json progress = engine_->progress();
  out["status"] = progress.at("status") == "idle" ? "encoding" : progress.at("status");
  out["fraction"] = progress.value("fraction", 0.0);
  for (const char* key : {"encode_s", "error"})
    if (progress.contains(key)) out[key] = progress.at(key);
  return out;
}

void CompareSide::changed() {
  const SceneEngine::Stage stage = engine_->stage();
  if (stage == SceneEngine::Stage::failed) return failed_("side b (" + source_->model_path + "): " + engine_->error());
  if (stage != SceneEngine::Stage::ready || announced_) return;
  announced_ = true;
  std::fprintf(stderr, "lact serve: side b ready (%s)\n",
               terminal_text(fs::path(source_->model_path).filename().string()).c_str());
}

}  // namespace lact::serve
