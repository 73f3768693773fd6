// Run::render_path and how a run opens its scene: a saved state (its model, data and preprocessing from its
// metadata) or a model whose --inputs it encodes.
#include "core/scene_state_io.h"
#include "pipeline/output_ownership.h"
#include "pipeline/path_frame.h"
#include "pipeline/resume.h"
#include "pipeline/run.h"
#include "pipeline/run_work.h"
#include "system/error.h"

namespace lact {

namespace {
// The frames of `path` and, into `need`, their sizes and the frames rendered at once (add_frame_sizes).
std::vector<Camera> path_frames(const std::string& path, int patch, MemoryNeed& need) {
  std::vector<Camera> frames = read_path_frames(path, patch);
  add_frame_sizes(frames, path, need);
  return frames;
}
// Encoding the share (from inputs) and rendering the frames, for the time estimate.
WorkSize path_work(const SceneSelection& selection, std::pair<size_t, size_t> share, const std::vector<Camera>& frames,
                   const SceneState& state) {
  WorkSize work = encode_work(selection, share);
  if (!work.state_views) work.state_views = state.input_views, work.height = state.height, work.width = state.width;
  for (const Camera& c : frames) {
    if (work.renders.empty() || work.renders.back().height != c.height || work.renders.back().width != c.width)
      work.renders.push_back({c.height, c.width, 0});
    ++work.renders.back().views;
  }
  return work;
}
}  // namespace

Run::Opened Run::open_state(SceneRequest& r, bool with_scene) {
  Opened opened;
  on_every_rank([&] {
    const auto metadata = read_scene_state_metadata(r.state);
    if (r.model.empty()) r.model = model_recorded_in_state(metadata, r.state);
    out_.inputs.add(r.model);
    if (!r.video.empty()) check_named_output(r.video, "--video", out_.options.force, out_.inputs, true);
    open_model(r.model);
    opened.state = load_scene_state(r.state, model_->weights(), backend()).state;
    if (with_scene) opened.selection = plan_from_state_metadata(metadata, r.data, r.state, model_->config().patch_size);
  });
  return opened;
}

void Run::open_model_for_inputs(SceneRequest& r) {
  on_every_rank([&] {
    if (!r.video.empty()) check_named_output(r.video, "--video", out_.options.force, out_.inputs, true);
    open_model(r.model);
    fill_inputs(r.data, r.command, "give --inputs (to encode) or --state (a saved scene state)");
  });
}

// From a state, or the inputs encoded across the ranks; the frames rendered by the lead.
void Run::render_path(SceneRequest r, const std::string& path) {
  SceneState state;
  SceneSelection selection;
  RunInputs read;
  if (!r.state.empty()) {
    state = std::move(open_state(r, false).state);
    read.state_path = r.state;
  } else {
    open_model_for_inputs(r);
    on_every_rank([&] {
      selection = select_scene_views(r.data, model().config().patch_size);
      add_scene_inputs(selection, out_.inputs);
      if (!r.video.empty()) check_named_output(r.video, "--video", out_.options.force, out_.inputs, true);
    });
    read.selection = &selection;
  }
  read.model_path = r.model, read.model = &model(), read.camera_path = path;
  agree_on_inputs(distribution(), read);
  on_every_rank([&] {  // the path's cameras in the world the scene renders in
    const bool from_state = !r.state.empty();
    const PathFrame frame =
        from_state ? state_frame(read_scene_state_metadata(r.state), r.state) : selection_frame(selection);
    check_path_frame(path, frame, r.state, leads());
  });
  if (r.state.empty()) on_every_rank([&] { check_guard_rails(selection, leads()); });
  // The path's memory, checked once: the encode and its reads (from inputs), a call's frames at each size.
  std::vector<Camera> frames;
  std::pair<size_t, size_t> share;
  on_every_rank([&] {
    MemoryNeed need;
    if (r.state.empty()) share = input_share(selection, distribution()), need = encode_need(selection, share);
    frames = path_frames(path, model().config().patch_size, need);
    if (leads()) check_ours_to_replace(out_, path_frame_names(frames.size(), out_.options));
    check_memory(need);
    check_time(path_work(selection, share, frames, state), "");
    if (warnings_ == WarningMode::Off) return;
    std::vector<std::string> sizes;  // a frame size far from the model's training size
    for (const auto& [height, width] : need.render_sizes)
      if (const std::string text = size_warning(model().weights(), height, width,
                                                "make the path near the training pixel count (lact path --size)");
          !text.empty())
        sizes.push_back(path + ": a frame's " + text);
    say_warnings(sizes, leads());
  });
  if (r.state.empty()) announce(selection, std::to_string(frames.size()) + " path frames", out_.folder.root(), r);
  if (r.state.empty())
    state = encode_as_planned(read_inputs(selection, share, distribution()), {}, distribution().collective);
  if (!leads()) return;
  remove_previous_frames(out_);
  render_frames(model(), state, path, frames, r.video, r.fps, out_);
}

}  // namespace lact
