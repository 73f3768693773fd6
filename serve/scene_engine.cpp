#include "serve/scene_engine.h"

#include <atomic>

namespace lact::serve {

SceneEngine::SceneEngine(session::SceneSource& source, int encode_threads, int render_threads, Post post,
                         Deliver deliver, Changed changed)
    : source_(source),
      encode_threads_(encode_threads),
      render_threads_(render_threads),
      post_(std::move(post)),
      deliver_(std::move(deliver)),
      changed_(std::move(changed)) {}

SceneEngine::~SceneEngine() { stop(); }

SceneEngine::Stage SceneEngine::stage() const {
  if (renderer_) return Stage::ready;
  if (!encode_) return Stage::idle;
  return encode_->finished() && !encode_->error().empty() ? Stage::failed : Stage::encoding;
}

void SceneEngine::start() {
  if (encode_) return;
  const int generation = ++generation_;
  // One notice in flight at a time is enough: it reads the newest progress.
  auto posted = std::make_shared<std::atomic<bool>>(false);
  encode_ = std::make_unique<session::EncodeJob>(source_, encode_threads_, [this, generation, posted] {
    if (!posted->exchange(true))
      post_([this, generation, posted] {
        posted->store(false);
        if (generation == generation_) encode_changed();
      });
  });
  encode_->start();
}

void SceneEngine::release() {
  renderer_.reset();
  awaiting_.clear();
  encode_.reset();
  ++generation_;  // a notice of the encode just dropped, still on its way, is ignored
}

void SceneEngine::stop_encode() {
  if (renderer_ || !encode_) return;  // a ready scene's encode holds its state
  encode_.reset();
  ++generation_;
}

void SceneEngine::stop() {
  stop_encode();
  release();
}

nlohmann::json SceneEngine::progress() const {
  static const char* const names[] = {"idle", "encoding", "ready", "failed"};
  const Stage now = stage();
  nlohmann::json out{{"status", names[static_cast<int>(now)]}};
  if (!encode_) return out;
  const session::EncodeJob::Progress p = encode_->progress();
  out["stage"] = p.stage, out["fraction"] = p.fraction, out["elapsed_s"] = p.elapsed_s;
  if (now == Stage::ready) out["encode_s"] = encode_->encode_seconds();
  if (now == Stage::failed) out["error"] = encode_->error();
  return out;
}

std::string SceneEngine::error() const { return encode_ && encode_->finished() ? encode_->error() : ""; }

std::shared_ptr<const SceneState> SceneEngine::state() const { return renderer_ ? encode_->state() : nullptr; }

void SceneEngine::encode_changed() {
  if (encode_ && encode_->finished() && encode_->error().empty() && !renderer_) {
    session::SceneSource& s = source_;
    renderer_ = std::make_unique<session::RenderThread>(
        *s.run, encode_->state(), [&s](int view) { return s.ground_truth(view); }, s.width, s.height, render_threads_,
        [this](int channel) { post_([this, channel] { take(channel); }); },
        [&s](int view) { return s.nearest_input(view); });
    for (const auto& [channel, request] : held_) awaiting_[channel] = renderer_->submit(request, channel);
    held_.clear();
  }
  if (changed_) changed_();
}

void SceneEngine::submit(int channel, const session::RenderRequest& request) {
  if (renderer_)
    awaiting_[channel] = renderer_->submit(request, channel);
  else
    held_[channel] = request;
}

void SceneEngine::forget(int channel) {
  held_.erase(channel);
  awaiting_.erase(channel);
  if (renderer_) renderer_->forget(channel);
}

bool SceneEngine::submit_job(std::function<void()> job) {
  if (!renderer_) return false;
  renderer_->submit_job(std::move(job));
  return true;
}

void SceneEngine::take(int channel) {
  if (!renderer_ || channel < 0) return;
  std::optional<session::RenderedView> view = renderer_->take(channel);
  if (!view) return;
  auto awaited = awaiting_.find(channel);
  if (awaited != awaiting_.end() && view->serial >= awaited->second) awaiting_.erase(awaited);  // not a stale one
  deliver_(channel, std::move(*view));
}

}  // namespace lact::serve
