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
    : source_(std::move(source)),
      options_(options),
      post_(std::move(post)),
      failed_(std::move(failed)),
      deliver_(std::move(deliver)) {
  encode_ = std::make_unique<session::EncodeJob>(*source_, options.common.threads, [this] {
    if (!encode_posted_.exchange(true)) post_([this] { encode_changed(); });
  });
}

CompareSide::~CompareSide() { stop(); }

void CompareSide::start() { encode_->start(); }

void CompareSide::stop() {
  renderer_.reset();
  encode_.reset();
}

nlohmann::json CompareSide::describe() const {
  nlohmann::json out = side_names(*source_);
  out["side"] = "b";
  if (!encode_) return out;
  const session::EncodeJob::Progress progress = encode_->progress();
  const bool failed = encode_->finished() && !encode_->error().empty();
  out["status"] = ready() ? "ready" : failed ? "failed" : "encoding";
  out["fraction"] = progress.fraction;
  if (ready()) out["encode_s"] = encode_->encode_seconds();
  if (failed) out["error"] = encode_->error();
  return out;
}

void CompareSide::encode_changed() {
  encode_posted_ = false;
  if (!encode_ || !encode_->finished() || renderer_) return;
  if (!encode_->error().empty()) return failed_("side b (" + source_->model_path + "): " + encode_->error());
  std::fprintf(stderr, "lact serve: side b ready (%s)\n",
               terminal_text(fs::path(source_->model_path).filename().string()).c_str());
  session::SceneSource& s = *source_;
  renderer_ = std::make_unique<session::RenderThread>(
      *s.run, encode_->state(), [&s](int view) { return s.ground_truth(view); }, s.width, s.height,
      session::render_threads(options_, s), [this](int channel) { post_([this, channel] { take(channel); }); },
      [&s](int view) { return s.nearest_input(view); });
  for (const auto& [channel, request] : held_) renderer_->submit(request, channel);
  held_.clear();
}

void CompareSide::submit(int channel, const session::RenderRequest& request) {
  if (renderer_)
    renderer_->submit(request, channel);
  else
    held_[channel] = request;
}

void CompareSide::forget(int channel) {
  held_.erase(channel);
  if (renderer_) renderer_->forget(channel);
}

void CompareSide::take(int channel) {
  if (!renderer_ || channel < 0) return;
  std::optional<session::RenderedView> view = renderer_->take(channel);
  if (view) deliver_(channel, std::move(*view));
}

}  // namespace lact::serve
