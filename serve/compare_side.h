// `lact serve --compare-model M2` or `--compare-state S2` (docs/guide/serve.md: comparing two models): side "b",
// a second engine beside the Hub's one. The same scene encoded by a second model, or a second encoded state of
// it, with its own Run, encode job and render thread; every camera a client sends is rendered here too (the
// newest camera of a channel wins, as on side "a"), measured on test views against the same ground truth. No
// network code: the Hub forwards cameras and hands results back on its network thread through `post`.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/scene_engine.h"
#include "serve/serve_options.h"
#include "session/scene_source.h"

namespace lact::serve {

// Side b's scene, opened and checked before the port is bound: Error (one line naming the flag) for a missing
// file, both flags at once, or a scene that does not match `main` (its views, its working size). Null when
// neither flag is given.
std::unique_ptr<session::SceneSource> open_compare_source(const ServeOptions& options,
                                                          const session::SceneSource& main);

// {"model": file name, "state": file name or null}: what names a side on the page (no file-system path).
nlohmann::json side_names(const session::SceneSource& source);

class CompareSide {
 public:
  using Post = SceneEngine::Post;
  using Deliver = SceneEngine::Deliver;
  // `failed` (network thread) when side b's encode fails; `deliver` each result of a channel's camera.
  CompareSide(std::unique_ptr<session::SceneSource> source, const ServeOptions& options, Post post,
              std::function<void(const std::string&)> failed, Deliver deliver);
  CompareSide(const CompareSide&) = delete;
  CompareSide& operator=(const CompareSide&) = delete;

  void start() { engine_->start(); }  // the encode (or the state's load)
  void stop() { engine_->stop(); }    // the encode, then the render thread (a render in progress finishes)
  bool ready() const { return engine_->ready(); }
  // {"side": "b", "model", "state", "status": encoding | ready | failed, "fraction", "encode_s"}.
  nlohmann::json describe() const;
  const session::SceneSource& source() const { return *source_; }

  void submit(int channel, const session::RenderRequest& request) { engine_->submit(channel, request); }
  void forget(int channel) { engine_->forget(channel); }

 private:
  void changed();  // network thread

  std::unique_ptr<session::SceneSource> source_;
  std::function<void(const std::string&)> failed_;
  std::unique_ptr<SceneEngine> engine_;
  bool announced_ = false;
};

}  // namespace lact::serve
