#include "serve/hub.h"

#include <cstdio>

#include "system/terminal_text.h"

namespace lact::serve {

Hub::Hub(const ServeOptions& options, session::SceneSource& source, std::string token, Post post,
         std::function<void(const std::string&)> failed, std::unique_ptr<session::SceneSource> compare)
    : options_(options),
      source_(source),
      token_(std::move(token)),
      post_(std::move(post)),
      failed_(std::move(failed)),
      frame_(session::scene_frame(source.cameras)) {
  limits_.patch = source.model->config().patch_size;
  limits_.max_side = options.max_side;
  description_ = scene_description(source, frame_, limits_);
  VideoLimits video_limits;
  video_limits.max_frames = options.max_video_frames, video_limits.max_jobs = options.max_video_jobs;
  video_limits.max_side = options.max_side, video_limits.patch = limits_.patch;
  video_limits.max_seconds = options.max_video_seconds;
  videos_ = std::make_unique<VideoJobs>(
      options.out, video_limits, post_,
      [this](std::function<void()> job) {
        if (!renderer_) return false;
        renderer_->submit_job(std::move(job));
        return true;
      },
      [this](int client, const nlohmann::json& message) {
        auto found = channels_.find(client);
        if (found != channels_.end() && found->second.on_status) found->second.on_status(message);
      });
  if (compare) open_compare(std::move(compare));
  encode_ = std::make_unique<session::EncodeJob>(source_, options.common.threads, [this] {
    // From the encode's thread: one pending notice at a time is enough (it reads the newest progress).
    if (!encode_posted_.exchange(true)) post_([this] { encode_changed(); });
  });
}

Hub::~Hub() { stop(); }

void Hub::stop() {
  renderer_.reset();
  encode_.reset();
  if (compare_) compare_->stop();
}

void Hub::start() {
  encode_->start();
  if (compare_) compare_->start();
}

void Hub::open_compare(std::unique_ptr<session::SceneSource> compare) {
  compare_ = std::make_unique<CompareSide>(std::move(compare), options_, post_, failed_,
                                           [this](int channel, session::RenderedView view) {
                                             auto found = channels_.find(channel);
                                             if (found == channels_.end() || !found->second.on_side_b) return;
                                             OnView on_view = found->second.on_side_b;  // may close its channel
                                             on_view(std::move(view));
                                           });
  nlohmann::json a = side_names(source_);
  a["side"] = "a";
  description_["sides"] = nlohmann::json::array({a, side_names(compare_->source())});
  description_["sides"][1]["side"] = "b";
}

nlohmann::json Hub::status() const {
  const session::EncodeJob::Progress progress = encode_->progress();
  nlohmann::json out{{"type", "status"},
                     {"stage", progress.stage},
                     {"fraction", progress.fraction},
                     {"elapsed_s", progress.elapsed_s}};
  if (ready()) {
    out["status"] = "ready";
    out["encode_s"] = encode_->encode_seconds();
  } else {
    // Finished without an error but the renderer not yet made (encode_changed runs after the job ends): still
    // "encoding" for a moment, never "failed" with no error (a client polling then saw a failure, one CI run).
    const bool failed = encode_->finished() && !encode_->error().empty();
    out["status"] = failed ? "failed" : "encoding";
    if (failed) out["error"] = encode_->error();
  }
  return out;
}

nlohmann::json Hub::scene() const {
  nlohmann::json out = description_;
  out["status"] = status();
  if (compare_) out["sides"][1] = compare_->describe();
  return out;
}

void Hub::encode_changed() {
  encode_posted_ = false;
  const nlohmann::json now = status();
  const std::string line = now.at("stage").get<std::string>();
  if (line != last_printed_) {
    std::fprintf(stderr, "lact serve: %s (%.0f%%)\n", terminal_text(line).c_str(),
                 100 * now.at("fraction").get<double>());
    last_printed_ = line;
  }
  if (encode_->finished() && !renderer_) {
    if (!encode_->error().empty()) {
      for (auto& [id, channel] : channels_)
        if (channel.on_status) channel.on_status(now);
      failed_(encode_->error());
      return;
    }
    renderer_ = std::make_unique<session::RenderThread>(
        *source_.run, encode_->state(), [this](int view) { return source_.ground_truth(view); }, source_.width,
        source_.height, session::render_threads(options_, source_),
        [this](int channel) { post_([this, channel] { deliver(channel); }); },
        [this](int view) { return source_.nearest_input(view); });
    for (const auto& [channel, request] : held_) renderer_->submit(request, channel);
    held_.clear();
  }
  const nlohmann::json message = status();
  for (auto& [id, channel] : channels_)
    if (channel.on_status) channel.on_status(message);
}

int Hub::open_channel(OnView on_view, OnStatus on_status, OnView on_side_b) {
  const int channel = next_channel_++;
  channels_[channel] = Channel{std::move(on_view), std::move(on_status), std::move(on_side_b)};
  return channel;
}

void Hub::close_channel(int channel) {
  if (channels_.count(channel)) videos_->client_left(channel);  // its video job cancelled
  channels_.erase(channel);
  held_.erase(channel);
  if (renderer_) renderer_->forget(channel);
  if (compare_) compare_->forget(channel);
}

void Hub::submit(int channel, const session::RenderRequest& request, bool side_a, bool side_b) {
  auto found = channels_.find(channel);
  if (found == channels_.end()) return;
  if (side_b && compare_ && found->second.on_side_b) compare_->submit(channel, request);
  if (!side_a) return;
  if (renderer_)
    renderer_->submit(request, channel);
  else
    held_[channel] = request;
}

nlohmann::json Hub::start_video(int client, const std::string& body) {
  if (!ready()) throw VideoRefusal{503, "the scene is still being encoded"};
  if (!channels_.count(client) || !channels_.at(client).on_status)
    throw VideoRefusal{400, "client: " + std::to_string(client) +
                                " is no open stream (give ?client=N, the \"client\" of the stream's scene message)"};
  return videos_->start(client, body, *source_.run, encode_->state());
}

void Hub::deliver(int channel) {
  if (!renderer_ || channel < 0) return;
  std::optional<session::RenderedView> view = renderer_->take(channel);
  auto found = channels_.find(channel);
  if (!view || found == channels_.end()) return;
  // A copy of the callback: it may close its own channel.
  OnView on_view = found->second.on_view;
  on_view(std::move(*view));
}

}  // namespace lact::serve
