#include "serve/served_scenes.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/scene_state_io.h"
#include "datasets/scene.h"
#include "system/error.h"
#include "system/terminal_text.h"
#include "system/utf8_text.h"

namespace fs = std::filesystem;

namespace lact::serve {

namespace {

constexpr double kBytesPerGb = 1024.0 * 1024.0 * 1024.0;

// The scenes of a --data index given without --scene (read once: each scene is planned from this list, not by
// reading the index again); empty when the flags name one scene.
SceneList index_scenes(const ServeOptions& o) {
  if (!o.states.empty() || !o.state.empty() || o.data.data.empty() || !o.data.scene.empty()) return {};
  SceneList list = read_scene_list(o.data.data, read_options(o.data));
  if (!list.failed.empty() && list.scenes.size() + list.failed.size() > 1) throw Error(list.failed[0].second);
  std::set<std::string> names;
  for (const Scene& scene : list.scenes)
    if (!names.insert(scene.name).second)
      throw Error(o.data.data, "two scenes are called '" + scene.name + "' (give --scene to serve one)");
  return list;
}

std::string safe_file_name(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 60)) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out;
}

// Whether the state file at `path` records what `source`'s scene is encoded from (model, data, scene, inputs, size).
bool records_scene(const std::string& path, const std::map<std::string, std::string>& origin,
                   const session::SceneSource& source) {
  std::map<std::string, std::string> recorded;
  try {
    recorded = read_scene_state_metadata(path);
  } catch (const std::exception&) {
    return false;
  }
  std::map<std::string, std::string> wanted = origin;
  wanted["height"] = std::to_string(source.height), wanted["width"] = std::to_string(source.width);
  for (const auto& [key, value] : wanted) {
    auto found = recorded.find(key);
    if (found == recorded.end() || found->second != value) return false;
  }
  return true;
}

}  // namespace

std::vector<std::unique_ptr<session::SceneSource>> open_served_scenes(const ServeOptions& o) {
  if (!o.state.empty() && !o.states.empty()) throw Error("--state", "given twice");
  std::vector<std::unique_ptr<session::SceneSource>> sources;
  std::shared_ptr<Run> shared;
  const auto open = [&](const session::SceneOptions& one, const Scene* scene) {
    sources.push_back(std::make_unique<session::SceneSource>(session::open_scene_source(one, shared, scene)));
    shared = sources.back()->run;
  };
  for (const std::string& state : o.states) {  // one scene per --state
    session::SceneOptions one = o;
    one.state = state;
    open(one, nullptr);
  }
  const SceneList index = index_scenes(o);
  for (size_t i = 0; index.scenes.size() > 1 && i < index.scenes.size(); ++i) {  // one per scene of the index
    session::SceneOptions one = o;
    one.data.scene = index.scenes[i].name;
    open(one, &index.scenes[i]);
  }
  if (sources.empty()) open(o, nullptr);  // the one scene of the usual flags
  if (sources.size() > 1 && !(o.compare_model.empty() && o.compare_state.empty()))
    throw Error(o.compare_model.empty() ? "--compare-state" : "--compare-model",
                "compares two encodings of one scene: serve one scene (--scene, or one --state)");
  return sources;
}

std::vector<int> states_to_release(const std::vector<int64_t>& held, const std::vector<uint64_t>& last_used,
                                   int64_t bound, int keep, const std::function<bool(int)>& pinned) {
  int64_t total = 0;
  std::vector<int> candidates;
  for (int i = 0; i < static_cast<int>(held.size()); ++i) {
    total += held[i];
    if (held[i] > 0 && i != keep && !(pinned && pinned(i))) candidates.push_back(i);
  }
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) { return last_used[a] < last_used[b]; });
  std::vector<int> out;
  for (int i : candidates) {
    if (total <= bound) break;
    out.push_back(i);
    total -= held[i];
  }
  return out;
}

ServedScenes::ServedScenes(std::vector<std::unique_ptr<session::SceneSource>> sources, const ServeOptions& options,
                           SceneEngine::Post post, Deliver deliver, Changed changed)
    : options_(options), post_(post), changed_(std::move(changed)) {
  const bool many = sources.size() > 1;
  for (size_t i = 0; i < sources.size(); ++i) {
    Scene scene;
    scene.source = std::move(sources[i]);
    session::SceneSource& s = *scene.source;
    const int index = static_cast<int>(i);
    scene.engine = std::make_unique<SceneEngine>(
        s, options.common.threads, session::render_threads(options, s), post,
        [deliver, index](int channel, session::RenderedView view) { deliver(index, channel, std::move(view)); },
        [this, index] { engine_changed(index); });
    if (many && s.state_path.empty()) {
      scene.spill_file = (fs::path(options.out) / "states" /
                          (std::to_string(i) + "_" + safe_file_name(s.selection.scene.name) + ".lact"))
                             .string();
      std::error_code error;
      if (fs::exists(fs::symlink_status(scene.spill_file, error))) {
        DataOptions data = options.data;
        data.scene = s.selection.scene.name;
        if (records_scene(scene.spill_file, origin_metadata(data, s.selection, s.model_path), s)) {
          s.state_path = scene.spill_file;  // read back, not encoded again
        } else {
          std::fprintf(stderr,
                       "lact serve: warning: %s records another encoding of scene '%s': left alone, "
                       "the scene is encoded again each time it is released\n",
                       terminal_text(scene.spill_file).c_str(), terminal_text(s.selection.scene.name).c_str());
        }
        scene.spill_file.clear();
      }
    }
    scenes_.push_back(std::move(scene));
  }
}

ServedScenes::~ServedScenes() { stop(); }

void ServedScenes::stop() {
  waiting_.clear();
  for (Scene& scene : scenes_) scene.engine->stop_encode();
  for (Scene& scene : scenes_) scene.engine->stop();
}

void ServedScenes::use(int index) {
  Scene& scene = scenes_.at(index);
  scene.last_used = ++clock_;
  if (scene.engine->stage() != SceneEngine::Stage::idle) return;
  if (index == encoding_ || queued(index)) return;
  waiting_.push_back(index);
  start_next();
}

bool ServedScenes::queued(int scene) const {
  return std::find(waiting_.begin(), waiting_.end(), scene) != waiting_.end();
}

void ServedScenes::start_next() {
  if (encoding_ >= 0 || waiting_.empty()) return;
  encoding_ = waiting_.front();
  waiting_.pop_front();
  scenes_[encoding_].engine->start();
  if (changed_) changed_(encoding_);
}

void ServedScenes::engine_changed(int index) {
  Scene& scene = scenes_.at(index);
  const SceneEngine::Stage stage = scene.engine->stage();
  if (stage == SceneEngine::Stage::ready && !scene.counted) {
    scene.counted = true;
    scene.bytes = scene.engine->state()->floats() * static_cast<int64_t>(sizeof(float));
    const bool loaded = !scene.source->state_path.empty();
    ++(loaded ? loads_ : encodes_);
    if (!loaded && !scene.spill_file.empty()) save(index);
    fit(index);
  }
  if (stage == SceneEngine::Stage::ready || stage == SceneEngine::Stage::failed) {
    if (encoding_ == index) encoding_ = -1;
    start_next();
  }
  if (changed_) changed_(index);
}

void ServedScenes::save(int index) {
  Scene& scene = scenes_[index];
  session::SceneSource& s = *scene.source;
  DataOptions data = options_.data;
  data.scene = s.selection.scene.name;
  const std::map<std::string, std::string> origin = origin_metadata(data, s.selection, s.model_path);
  const std::string file = scene.spill_file;
  std::shared_ptr<const SceneState> state = scene.engine->state();
  scene.saving = true;
  const bool queued = scene.engine->submit_job([this, index, file, state, origin, &s] {
    std::string error;
    try {
      std::error_code made;
      fs::create_directories(fs::path(file).parent_path(), made);
      if (fs::exists(fs::symlink_status(file, made))) throw Error(file, "exists already (another server's?)");
      s.run->save_state(file, *state, origin, StoredDtype::F32);
    } catch (const std::exception& e) {
      error = e.what();
    }
    post_([this, index, error] { saved(index, error); });
  });
  if (!queued) saved(index, "the scene was released before its state was saved");
}

void ServedScenes::saved(int index, const std::string& error) {
  Scene& scene = scenes_.at(index);
  scene.saving = false;
  if (error.empty()) {
    scene.source->state_path = scene.spill_file;  // from now on read back, not encoded
    std::fprintf(stderr, "lact serve: scene '%s' saved to %s\n",
                 terminal_text(scene.source->selection.scene.name).c_str(), terminal_text(scene.spill_file).c_str());
  } else {
    std::fprintf(stderr, "lact serve: warning: scene '%s' was not saved (%s): it is encoded again after a release\n",
                 terminal_text(scene.source->selection.scene.name).c_str(), terminal_text(error).c_str());
  }
  scene.spill_file.clear();
  fit(-1);
}

void ServedScenes::fit(int keep) {
  std::vector<int64_t> held;
  std::vector<uint64_t> last_used;
  for (const Scene& scene : scenes_) held.push_back(scene.bytes), last_used.push_back(scene.last_used);
  // The most recently used state stays, even alone over the bound: the scene a client looks at is served.
  if (keep < 0)
    for (int i = 0; i < size(); ++i)
      if (held[i] > 0 && (keep < 0 || last_used[i] > last_used[keep])) keep = i;
  const auto bound = static_cast<int64_t>(options_.cache_memory_gb * kBytesPerGb);
  const auto kept = [this](int i) { return scenes_[i].saving || (pinned && pinned(i)); };
  for (int index : states_to_release(held, last_used, bound, keep, kept)) {
    Scene& scene = scenes_[index];
    scene.engine->release();
    scene.bytes = 0, scene.counted = false;
    ++releases_;
    std::fprintf(stderr, "lact serve: scene '%s' released (--cache-memory %.3g GB)\n",
                 terminal_text(scene.source->selection.scene.name).c_str(), options_.cache_memory_gb);
    if (changed_) changed_(index);
  }
}

int64_t ServedScenes::held_bytes() const {
  int64_t total = 0;
  for (const Scene& scene : scenes_) total += scene.bytes;
  return total;
}

nlohmann::json ServedScenes::cache() const {
  int held = 0;
  for (const Scene& scene : scenes_) held += scene.bytes > 0;
  return {{"memory_bytes", static_cast<int64_t>(options_.cache_memory_gb * kBytesPerGb)},
          {"held_bytes", held_bytes()},
          {"held", held},
          {"encodes", encodes_},
          {"loads", loads_},
          {"releases", releases_}};
}

nlohmann::json ServedScenes::list() const {
  nlohmann::json scenes = nlohmann::json::array();
  for (size_t i = 0; i < scenes_.size(); ++i) {
    const Scene& scene = scenes_[i];
    const session::SceneSource& s = *scene.source;
    const std::string& file = s.state_path;
    scenes.push_back({{"index", i},
                      {"name", utf8_escaped(s.selection.scene.name)},
                      {"views", s.views()},
                      {"size", std::to_string(s.height) + "x" + std::to_string(s.width)},
                      {"status", scene.engine->progress().at("status")},
                      {"state_file", file.empty() ? nlohmann::json()
                                                  : nlohmann::json(utf8_escaped(fs::path(file).filename().string()))},
                      {"state_bytes", scene.bytes}});
  }
  return {{"scenes", scenes}, {"cache", cache()}};
}

}  // namespace lact::serve
