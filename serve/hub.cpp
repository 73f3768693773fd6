#include "serve/hub.h"

#include <cstdio>
#include <filesystem>

#include "system/terminal_text.h"

namespace lact::serve {

namespace {

// The folders whose names a client's message drops: each scene's, its model's and state's, and --out.
ShownPaths folders_of(const ServeOptions& options, const std::vector<std::unique_ptr<session::SceneSource>>& scenes,
                      const session::SceneSource* compare) {
  std::vector<std::string> folders{options.out};
  auto add = [&folders](const std::string& file) {
    if (!file.empty()) folders.push_back(std::filesystem::path(file).parent_path().string());
  };
  for (const auto& source : scenes) {
    add(source->selection.scene.source), add(source->model_path), add(source->state_path);
    add(source->lpips_path);
  }
  if (compare) add(compare->model_path), add(compare->state_path);
  return ShownPaths(folders);
}

}  // namespace

Hub::Hub(const ServeOptions& options, std::vector<std::unique_ptr<session::SceneSource>> scenes, std::string token,
         Post post, std::function<void(const std::string&)> failed, std::unique_ptr<session::SceneSource> compare)
    : options_(options), token_(std::move(token)), post_(std::move(post)), failed_(std::move(failed)) {
  limits_.patch = scenes.at(0)->model->config().patch_size;  // one model for every scene
  limits_.max_side = options.max_side;
  shown_paths_ = folders_of(options, scenes, compare.get());
  for (const auto& source : scenes) frames_.push_back(session::scene_frame(source->cameras));
  scenes_ = std::make_unique<ServedScenes>(
      std::move(scenes), options, post_,
      [this](int scene, int channel, session::RenderedView view) { deliver(scene, channel, std::move(view)); },
      [this](int scene) { scene_changed(scene); });
  scenes_->pinned = [this](int scene) { return pinned(scene); };
  VideoLimits video_limits;
  video_limits.max_frames = options.max_video_frames, video_limits.max_jobs = options.max_video_jobs;
  video_limits.max_side = options.max_side, video_limits.patch = limits_.patch;
  video_limits.max_seconds = options.max_video_seconds;
  videos_ = std::make_unique<VideoJobs>(
      options.out, video_limits, post_,
      [this](int scene, std::function<void()> job) { return scenes_->engine(scene).submit_job(std::move(job)); },
      [this](int client, const nlohmann::json& message) {
        auto found = channels_.find(client);
        if (found != channels_.end() && found->second.on_status) found->second.on_status(message);
      });
  videos_->shown = [this](const std::string& message) { return shown(message); };
  if (compare) open_compare(std::move(compare));
}

Hub::~Hub() { stop(); }

void Hub::stop() {
  scenes_->stop();
  if (compare_) compare_->stop();
}

void Hub::start() {
  scenes_->use(0);
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
}

nlohmann::json Hub::status(int index) const {
  nlohmann::json out = progress_of(index);
  for (const char* key : {"stage", "error"})
    if (out.contains(key)) out[key] = shown(out.at(key).get<std::string>());
  return out;
}

nlohmann::json Hub::progress_of(int index) const {
  const nlohmann::json progress = scenes_->engine(index).progress();
  const bool on_disk = !scenes_->source(index).state_path.empty();
  const std::string idle = scenes_->queued(index) ? "waiting for another scene's encode"
                           : on_disk              ? "not in memory (its state file is read when asked for)"
                                                  : "not encoded yet (encoded when asked for)";
  nlohmann::json out{{"type", "status"},
                     {"scene_index", index},
                     {"stage", progress.value("stage", idle)},
                     {"fraction", progress.value("fraction", 0.0)},
                     {"elapsed_s", progress.value("elapsed_s", 0.0)}};
  const std::string now = progress.at("status");
  // Idle (not started, queued or released) reads as "encoding": a client asking for it starts it.
  out["status"] = now == "idle" ? "encoding" : now;
  for (const char* key : {"encode_s", "error"})
    if (progress.contains(key)) out[key] = progress.at(key);
  return out;
}

nlohmann::json Hub::scene(int index) const {
  nlohmann::json out = scene_description(scenes_->source(index), frames_.at(index), limits_);
  out["status"] = status(index);
  out["index"] = index;
  out["scenes"] = scenes_->size();
  if (compare_) {
    nlohmann::json a = side_names(scenes_->source(index));
    a["side"] = "a";
    nlohmann::json b = compare_->describe();
    if (b.contains("error")) b["error"] = shown(b.at("error").get<std::string>());
    out["sides"] = nlohmann::json::array({a, b});
  }
  return out;
}

bool Hub::pinned(int scene) const {
  if (videos_->uses_scene(scene)) return true;
  for (const auto& [id, channel] : channels_)
    if (channel.scene == scene && scenes_->engine(scene).holds(id)) return true;
  return false;
}

void Hub::scene_changed(int index) {
  const nlohmann::json now = progress_of(index);  // the terminal's line names the files in full
  const bool failed = now.at("status") == "failed";
  // With one scene its failure ends the server, whose last line says why.
  const std::string line = failed && scene_count() > 1 ? "failed: " + now.at("error").get<std::string>()
                                                       : now.at("stage").get<std::string>();
  const bool idle = scenes_->engine(index).stage() == SceneEngine::Stage::idle;  // released: said so already
  if (line != last_printed_[index] && !idle) {
    const std::string name = scene_count() > 1 ? "scene '" + source(index).selection.scene.name + "': " : "";
    std::fprintf(stderr, "lact serve: %s%s (%.0f%%)\n", terminal_text(name).c_str(), terminal_text(line).c_str(),
                 100 * now.at("fraction").get<double>());
    last_printed_[index] = line;
  }
  const nlohmann::json shown_now = status(index);
  for (auto& [id, channel] : channels_)
    if (channel.on_status && channel.scene == index) channel.on_status(shown_now);
  if (failed && scene_count() == 1) failed_(now.at("error").get<std::string>());
}

int Hub::open_channel(OnView on_view, OnStatus on_status, OnView on_side_b) {
  const int channel = next_channel_++;
  channels_[channel] = Channel{std::move(on_view), std::move(on_status), std::move(on_side_b)};
  return channel;
}

void Hub::close_channel(int channel) {
  auto found = channels_.find(channel);
  if (found == channels_.end()) return;
  videos_->client_left(channel);  // its video job cancelled
  scenes_->engine(found->second.scene).forget(channel);
  if (compare_) compare_->forget(channel);
  channels_.erase(found);
}

nlohmann::json Hub::select_scene(int channel, int index) {
  auto found = channels_.find(channel);
  if (found != channels_.end() && found->second.scene != index) {
    scenes_->engine(found->second.scene).forget(channel);
    found->second.scene = index;
  }
  scenes_->use(index);
  return scene(index);
}

int Hub::channel_scene(int channel) const {
  auto found = channels_.find(channel);
  return found == channels_.end() ? 0 : found->second.scene;
}

void Hub::submit(int channel, const session::RenderRequest& request, bool side_a, bool side_b) {
  auto found = channels_.find(channel);
  if (found == channels_.end()) return;
  if (side_b && compare_ && found->second.on_side_b) compare_->submit(channel, request);
  if (!side_a) return;
  const int index = found->second.scene;
  scenes_->engine(index).submit(channel, request);  // held until ready
  scenes_->use(index);
}

nlohmann::json Hub::start_video(int client, const std::string& body) {
  if (!channels_.count(client) || !channels_.at(client).on_status)
    throw VideoRefusal{400, "client: " + std::to_string(client) +
                                " is no open stream (give ?client=N, the \"client\" of the stream's scene message)"};
  int index = channels_.at(client).scene;
  try {
    index = body_scene(body, scene_count()).value_or(index);
  } catch (const std::exception& e) {
    throw VideoRefusal{400, e.what()};
  }
  if (const std::optional<Unavailable> why = unavailable(index)) throw VideoRefusal{why->status, why->message};
  return videos_->start(client, body, *source(index).run, scenes_->engine(index).state(), index);
}

std::optional<Hub::Unavailable> Hub::unavailable(int index) {
  scenes_->use(index);  // its encode or load starts when it is not in memory
  const SceneEngine& engine = scenes_->engine(index);
  if (engine.ready()) return std::nullopt;
  const std::string name = scene_count() > 1 ? "scene " + std::to_string(index) : "the scene";
  if (const std::optional<std::string> why = failure(index)) return Unavailable{500, *why};
  return Unavailable{503, name + " is still being encoded (or its state read): ask again"};
}

std::optional<std::string> Hub::failure(int index) const {
  const SceneEngine& engine = scenes_->engine(index);
  if (engine.stage() != SceneEngine::Stage::failed) return std::nullopt;
  const std::string name = scene_count() > 1 ? "scene " + std::to_string(index) : "the scene";
  return name + " could not be encoded: " + shown(engine.error());
}

void Hub::deliver(int index, int channel, session::RenderedView view) {
  auto found = channels_.find(channel);
  if (found == channels_.end() || found->second.scene != index) return;  // a late result of another scene
  // A copy of the callback: it may close its own channel.
  OnView on_view = found->second.on_view;
  on_view(std::move(view));
}

}  // namespace lact::serve
