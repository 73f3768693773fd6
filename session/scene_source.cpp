#include "session/scene_source.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/camera_geometry.h"
#include "core/lpips.h"
#include "core/scene_state_io.h"
#include "datasets/view_selection.h"
#include "pipeline/guard_rails.h"
#include "pipeline/model_cache.h"
#include "pipeline/path_frame.h"
#include "system/error.h"
#include "system/terminal_text.h"

namespace lact::session {

namespace fs = std::filesystem;

namespace {

// The model at `path`, loaded into the source's Run unless that Run (shared by other scenes) holds it already:
// the scenes of one server share one model, so a scene that names another is refused, naming `where`.
void use_model(SceneSource& s, const std::string& path, const std::string& where) {
  s.model_path = path;
  const std::string& held = s.run->model_path();
  std::error_code error;
  if (held.empty()) {
    s.model = &s.run->load_model(path);
  } else if (held == path || fs::equivalent(held, path, error)) {
    s.model = &s.run->model();
  } else {
    throw Error(where, "needs the model '" + path + "', the other scenes '" + held +
                           "': the scenes one server shows share one model (give --model)");
  }
}

// As `lact render --state`: the model, data, scene and preprocessing the state recorded.
void plan_from_state(const SceneOptions& o, SceneSource& s) {
  const auto metadata = read_scene_state_metadata(o.state);
  use_model(s, o.model.empty() ? model_recorded_in_state(metadata, o.state) : o.model, o.state);

  s.selection = plan_from_state_metadata(metadata, o.data, o.state, s.model->config().patch_size);
  s.state_path = o.state;
}

}  // namespace

bool SceneSource::is_input(int view) const {
  return std::find(selection.inputs.begin(), selection.inputs.end(), view) != selection.inputs.end();
}

bool SceneSource::is_target(int view) const { return std::find(targets.begin(), targets.end(), view) != targets.end(); }

const char* SceneSource::role(int view) const { return is_input(view) ? "input" : is_target(view) ? "test" : "view"; }

std::vector<int> SceneSource::snap_views() const {
  std::vector<int> all = selection.inputs;
  all.insert(all.end(), targets.begin(), targets.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.empty())
    for (int i = 0; i < views(); ++i) all.push_back(i);
  return all;
}

int SceneSource::start_view(int requested) const {
  if (requested >= 0) return requested;
  // A test view first: its PSNR is of a novel view (an input view's would be a reconstruction's).
  if (!targets.empty()) return targets.front();
  return selection.inputs.empty() ? 0 : selection.inputs.front();
}

int SceneSource::nearest_input(int view) const {
  if (is_input(view) || selection.inputs.empty()) return -1;
  std::vector<Camera> inputs;
  for (int i : selection.inputs) inputs.push_back(cameras.at(i));
  return selection.inputs[nearest_camera(inputs, cameras.at(view))];
}

Image SceneSource::ground_truth(int view) const { return selected_views(selection, {view}, true).at(0).image; }

std::vector<PosedImage> SceneSource::input_view(int index) const {
  return selected_views(selection, {selection.inputs.at(index)}, true);
}

// LPIPS on the test views: --lpips FILE, else the weights `lact model fetch lpips` cached; none with --no-lpips,
// without test views, or under LPIPS's smallest size.
void open_lpips(const SceneOptions& o, SceneSource& s) {
  if (o.no_lpips || s.targets.empty()) return;
  const std::string path = !o.lpips.empty() ? o.lpips : cached_lpips_weights().value_or("");
  if (path.empty()) return;
  const LpipsNetwork& net = lpips_network_of_file(path);  // its smallest side: AlexNet 31, VGG16 16
  if (s.height < lpips_smallest_side(net) || s.width < lpips_smallest_side(net)) {
    if (!o.lpips.empty())
      throw Error("--lpips", "the views are " + std::to_string(s.height) + "x" + std::to_string(s.width) +
                                 ": LPIPS's " + net.name + " needs " + std::to_string(lpips_smallest_side(net)) +
                                 " pixels a side");
    return;
  }
  if (!s.run->lpips()) s.run->use_lpips(path);  // a shared Run's weights: read for its first scene
  s.lpips_path = path;
}

SceneSource open_scene_source(const SceneOptions& o, std::shared_ptr<Run> shared, const Scene* read) {
  SceneSource s;
  s.run = shared ? std::move(shared) : std::make_shared<Run>(o.common);
  if (!o.state.empty()) {
    plan_from_state(o, s);
  } else {
    use_model(s, o.model, "--model");
    DataOptions data = o.data;  // the model's trained size and input count when not given
    apply_model_defaults(data, *s.model, true);
    if (data.inputs.empty()) throw Error(o.command, "give --inputs (to encode) or --state (a saved scene state)");
    const int patch = s.model->config().patch_size;
    s.selection = read ? plan_scene(*read, data, patch, o.targets) : select_scene_views(data, patch, o.targets);
  }
  s.height = s.selection.height;
  s.width = s.selection.width;
  const Scene& scene = s.selection.scene;
  if (scene.views.empty()) throw Error(scene.source, "the scene has no views");
  // No test views when none are asked for, or "rest" of a scene whose views are all inputs.
  const bool none = o.targets.empty() || (o.targets == "rest" && s.selection.inputs.size() >= scene.views.size());
  s.targets =
      none ? std::vector<int>{} : select_views(o.targets, scene, true, s.selection.inputs, o.data.seed, "--targets");
  std::vector<int> all(scene.views.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  for (const PosedImage& v : selected_views(s.selection, all, false)) {
    v.camera.validate(scene.source);
    s.cameras.push_back(v.camera);
  }
  if (o.camera >= s.views())
    throw Error("--camera", "view " + std::to_string(o.camera) + " is out of range (the scene has " +
                                std::to_string(s.views()) + " views)");
  open_lpips(o, s);
  s.warnings = selection_warnings(s.model->weights(), s.selection);
  for (const std::string& w : s.warnings) std::fprintf(stderr, "lact: warning: %s\n", terminal_text(w).c_str());
  return s;
}

PathFrame cameras_frame(const SceneSource& source) {
  PathFrame frame = source.state_path.empty()
                        ? selection_frame(source.selection)
                        : state_frame(read_scene_state_metadata(source.state_path), source.state_path);
  frame.made_by = kViewerPathMaker;
  return frame;
}

int render_threads(const SceneOptions& o, const SceneSource& source) {
  if (o.render_threads > 0) return o.render_threads;
  const int patch = source.model->config().patch_size;
  const double tokens = static_cast<double>(source.height / patch) * (source.width / patch);
  const double flops = 2.0 * static_cast<double>(source.model->weights().parameter_count) * tokens;
  return flops < 1e9 ? 1 : o.common.threads;
}

}  // namespace lact::session
