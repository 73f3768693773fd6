#include "pipeline/scene_selection.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/camera.h"
#include "core/image_size.h"
#include "core/memory_estimate.h"
#include "core/scene_state_io.h"
#include "datasets/preprocess.h"
#include "datasets/view_selection.h"
#include "pipeline/backend_options.h"
#include "pipeline/memory_check.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/utf8_text.h"

namespace lact {

ReadOptions read_options(const DataOptions& o) {
  ReadOptions read;
  read.downscale = o.downscale;
  read.images = o.images;
  return read;
}

std::pair<int, int> default_size(int64_t pixels, int view_height, int view_width, int patch) {
  const double aspect = static_cast<double>(view_width) / view_height;
  const auto side = [patch](double exact) {
    return std::max(patch, static_cast<int>(std::lround(exact / patch)) * patch);
  };
  return {side(std::sqrt(pixels / aspect)), side(std::sqrt(pixels * aspect))};
}

namespace {

// --inputs, where "rest" is every view that is not a target (so it needs --targets, and not "rest" too).
std::vector<int> select_inputs(const Scene& scene, const DataOptions& o, const std::string& targets) {
  if (o.inputs != "rest" && o.model_inputs) {
    // Not typed by the user (the model's input_views): a refusal says where the selection came from.
    try {
      return select_views(o.inputs, scene, false, {}, o.seed, "--inputs");
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (the model's default --inputs, from its input_views: give --inputs)");
    }
  }
  if (o.inputs != "rest") return select_views(o.inputs, scene, false, {}, o.seed, "--inputs");
  if (targets.empty()) throw Error("--inputs", "'rest' is every view that is not a target: give --targets too");
  if (targets == "rest")
    throw Error("--inputs", "'rest' on both --inputs and --targets: each is the other's rest; give one of them views");
  const std::vector<int> target_views = select_views(targets, scene, true, {}, o.seed, "--targets");
  return select_views("rest", scene, false, target_views, o.seed, "--inputs");
}

// The working size (see plan_scene) and, into s.size_rule, how it was chosen.
std::pair<int, int> choose_size(SceneSelection& s, const DataOptions& o, int patch) {
  ViewLoadOptions load;
  std::tie(load.height, load.width) = o.size;
  s.size_rule = "--size";
  const Camera* first = s.scene.views.empty() ? nullptr : &s.scene.views[s.inputs.empty() ? 0 : s.inputs[0]].camera;
  if (!load.height && o.trained_height > 0 && first && first->height > 0 && first->width > 0) {
    const int64_t pixels = static_cast<int64_t>(o.trained_height) * o.trained_width;
    std::tie(load.height, load.width) = default_size(pixels, first->height, first->width, patch);
    s.size_rule = "the model's " + std::to_string(o.trained_height) + "x" + std::to_string(o.trained_width) +
                  " pixel count at the views' " + std::to_string(first->height) + "x" + std::to_string(first->width) +
                  " aspect";
  }
  if (!load.height && s.inputs.empty()) return {0, 0};  // no size asked for and nothing to size (info)
  if (!load.height) s.size_rule = "the views' own size";
  return working_size(s.scene, s.inputs.empty() ? std::vector<int>{0} : s.inputs, load, patch);
}

}  // namespace

SceneSelection plan_scene(const Scene& scene, const DataOptions& o, int patch, const std::string& targets) {
  SceneSelection s;
  s.scene = scene;
  if (!o.inputs.empty()) s.inputs = select_inputs(s.scene, o, targets);
  s.background = o.background;
  std::tie(s.height, s.width) = choose_size(s, o, patch);
  s.normalization = o.normalize_poses;
  if (s.normalization != PoseNormalization::None) {
    std::vector<Camera> reference;
    if (s.normalization == PoseNormalization::Inputs) {
      if (s.inputs.empty()) throw Error("--normalize-poses", "'inputs' needs --inputs");
      for (int i : s.inputs) reference.push_back(s.scene.views[i].camera);
    } else {
      for (const SceneView& v : s.scene.views) reference.push_back(v.camera);
    }
    s.pose = mean_pose_transform(reference);
  }
  return s;
}

SceneSelection select_scene_views(const DataOptions& o, int patch, const std::string& targets) {
  if (o.data.empty()) throw Error("--data", "no data given");
  const SceneList list = read_scene_list(o.data, read_options(o));
  // A scene named with --scene is used when it reads, whatever is wrong with the index's other scenes.
  if (!o.scene.empty())
    for (const Scene& s : list.scenes)
      if (s.name == o.scene) return plan_scene(s, o, patch, targets);
  if (!list.failed.empty()) throw Error(list.failed[0].second);
  return plan_scene(select_scene(list.scenes, o.scene, o.data), o, patch, targets);
}

void check_memory(const Model& model, int64_t views, int height, int width, const std::string& flag,
                  int64_t state_views) {
  check_encode_memory(model, views, height, width, flag, state_views);  // pipeline/memory_check.h
}

namespace {
std::vector<PosedImage> load_selected(const SceneSelection& s, const std::vector<int>& indices, bool with_images) {
  std::vector<PosedImage> views = load_views(s.scene, indices, s.height, s.width, s.background, with_images);
  for (PosedImage& v : views) v.camera = apply_pose_transform(s.pose, v.camera);
  return views;
}
}  // namespace

std::vector<PosedImage> selected_views(const SceneSelection& s, const std::vector<int>& indices, bool with_images) {
  if (with_images) check_view_reading(s.scene, indices, s.height, s.width);
  return load_selected(s, indices, with_images);
}

std::vector<PosedImage> read_checked_views(const SceneSelection& s, const std::vector<int>& indices) {
  return load_selected(s, indices, true);
}

namespace {
// Metadata is JSON: a path or name that is not UTF-8 is stored escaped (readable) under `key`, and its exact
// bytes as hex under `key`_hex, which metadata_or returns.
void put_text(std::map<std::string, std::string>& m, const std::string& key, const std::string& text) {
  m[key] = utf8_escaped(text);
  if (m[key] != text) m[key + "_hex"] = hex_of(text);
}
}  // namespace

std::map<std::string, std::string> origin_metadata(const DataOptions& o, const SceneSelection& s,
                                                   const std::string& model_path) {
  std::map<std::string, std::string> m;
  put_text(m, "model", absolute_path(model_path));
  put_text(m, "data", absolute_path(o.data));
  put_text(m, "scene", s.scene.name);
  nlohmann::json inputs = s.inputs;
  m["inputs"] = inputs.dump();
  put_text(m, "background", background_text(o.background));
  m["downscale"] = std::to_string(o.downscale);
  if (!o.images.empty()) put_text(m, "images", absolute_path(o.images));
  put_text(m, "normalize_poses", pose_normalization_name(o.normalize_poses));
  nlohmann::json world = std::vector<double>(s.pose.world.begin(), s.pose.world.end());
  m["pose_world"] = world.dump();
  m["pose_scale"] = nlohmann::json(s.pose.scale).dump();
  return m;
}

namespace {
// normalize_poses says how pose_world / pose_scale were made: "none" is the identity, and a transform recorded
// with it (or a normalisation recorded without one) means the two disagree and the cameras would be moved wrongly.
void check_recorded_normalization(const std::map<std::string, std::string>& m, const PoseTransform& t,
                                  const std::string& where) {
  auto recorded = m.find("normalize_poses");
  if (recorded == m.end()) return;  // (a state from before the field: its transform stands alone)
  const std::string& mode = recorded->second;
  if (mode != "none" && mode != "inputs" && mode != "all")
    throw Error(where, "metadata normalize_poses '" + mode.substr(0, 40) + "' is not none, inputs or all");
  const PoseTransform identity;
  const bool is_identity = t.world == identity.world && t.scale == identity.scale;
  if (mode == "none" && !is_identity)
    throw Error(where, "metadata normalize_poses is 'none' but pose_world / pose_scale hold a transform");
  if (mode != "none" && (m.find("pose_world") == m.end() || m.find("pose_scale") == m.end()))
    throw Error(where, "metadata normalize_poses is '" + mode + "' but the state records no pose_world / pose_scale");
}
}  // namespace

PoseTransform pose_from_metadata(const std::map<std::string, std::string>& m, const std::string& where) {
  PoseTransform t;
  auto world = m.find("pose_world");
  auto scale = m.find("pose_scale");
  if (world == m.end() || scale == m.end()) {
    check_recorded_normalization(m, t, where);
    return t;
  }
  try {
    const auto values = nlohmann::json::parse(world->second).get<std::vector<double>>();
    if (values.size() != 16) throw Error(where, "metadata pose_world must hold 16 numbers");
    std::copy(values.begin(), values.end(), t.world.begin());
    t.scale = nlohmann::json::parse(scale->second).get<double>();
  } catch (const nlohmann::json::exception&) {
    throw Error(where, "metadata pose_world / pose_scale is corrupt");
  }
  if (!(t.scale > 0) || !std::isfinite(t.scale)) throw Error(where, "metadata pose_scale must be positive");
  // What mean_pose_transform makes: a rigid motion, and a scale of at least 1e-12 (below it, 1) that is the
  // largest camera distance, so within the positions a camera may have.
  check_rigid_pose(t.world, where, "metadata pose_world");
  if (t.scale < 1e-12 || t.scale > 1e16)
    throw Error(where, "metadata pose_scale " + nlohmann::json(t.scale).dump() + " is outside [1e-12, 1e16]");
  check_recorded_normalization(m, t, where);
  return t;
}

void apply_model_defaults(DataOptions& o, const Model& model, bool inputs_too) {
  const ModelWeights& w = model.weights();
  o.trained_height = w.trained_height, o.trained_width = w.trained_width;
  if (inputs_too && o.inputs.empty() && w.trained_input_views > 0) {
    o.inputs = "uniform:" + std::to_string(w.trained_input_views);
    o.model_inputs = true;
  }
}

std::string metadata_or(const std::map<std::string, std::string>& m, const char* key, const std::string& fallback) {
  auto it = m.find(key);
  if (it == m.end()) return fallback;
  auto hex = m.find(std::string(key) + "_hex");  // the exact bytes of text that is not UTF-8 (put_text)
  std::string bytes;
  if (hex != m.end() && bytes_of_hex(hex->second, bytes) && utf8_escaped(bytes) == it->second) return bytes;
  return it->second;
}

namespace {
// The inputs list names the views the tensors were encoded from: in range, each once, as many as input_views.
void check_recorded_inputs(const std::map<std::string, std::string>& metadata, const SceneSelection& selection,
                           const std::string& state_path) {
  std::set<int> seen;
  for (int i : selection.inputs) {
    if (i < 0 || i >= static_cast<int>(selection.scene.views.size()))
      throw Error(state_path, "metadata inputs holds view " + std::to_string(i) + ", out of range for the scene's " +
                                  std::to_string(selection.scene.views.size()) + " views");
    if (!seen.insert(i).second) throw Error(state_path, "metadata inputs holds view " + std::to_string(i) + " twice");
  }
  const std::string count = metadata_or(metadata, "input_views", "");
  if (!count.empty() && metadata.count("inputs") && std::to_string(selection.inputs.size()) != count)
    throw Error(state_path, "metadata inputs lists " + std::to_string(selection.inputs.size()) +
                                " views but input_views is " + count.substr(0, 20));
}
}  // namespace

namespace {
// Error(state, "records the KIND PATH: REASON; pass FLAG"): the path is the state's word, not the user's. A
// relative one (lact encode records absolute paths; the Python module records the model as it was given) is read
// from the working directory, which the line says.
[[noreturn]] void refuse_recorded(const std::string& state_path, const char* kind, const std::string& path,
                                  const std::string& reason, const char* flag) {
  std::error_code error;
  const std::string cwd = std::filesystem::current_path(error).string();
  const std::string relative = std::filesystem::path(path).is_absolute()
                                   ? ""
                                   : " (relative to the working directory" + (error ? "" : " " + cwd) + ")";
  throw Error(state_path,
              std::string("records the ") + kind + " " + path + relative + ": " + reason + "; pass " + flag);
}
}  // namespace

std::string model_recorded_in_state(const std::map<std::string, std::string>& metadata, const std::string& state_path) {
  const std::string recorded = metadata_or(metadata, "model", "");
  if (recorded.empty()) throw Error(state_path, "records no model: pass --model");
  try {
    require_regular_file(recorded);
  } catch (const Error& e) {
    const std::string what = e.what();
    refuse_recorded(state_path, "model", recorded, what.substr(std::min(what.size(), recorded.size() + 2)), "--model");
  }
  return recorded;
}

SceneSelection plan_from_state_metadata(const std::map<std::string, std::string>& metadata, DataOptions data,
                                        const std::string& state_path, int patch) {
  if (data.data.empty()) {
    const std::string recorded = metadata_or(metadata, "data", "");
    if (recorded.empty()) throw Error(state_path, "records no data: pass --data for the scene's cameras");
    data.data = recorded;
    std::error_code error;
    if (!std::filesystem::exists(data.data, error))
      refuse_recorded(state_path, "data", data.data, "no such file or folder", "--data for the scene's cameras");
  }
  if (data.scene.empty()) data.scene = metadata_or(metadata, "scene", "");
  if (metadata.count("background"))
    data.background = parse_background(metadata_or(metadata, "background", ""), state_path + ": metadata background");
  if (data.images.empty()) data.images = metadata_or(metadata, "images", "");
  const std::string downscale = metadata_or(metadata, "downscale", "1");
  if (downscale.empty() || downscale.size() > 2 || downscale.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(downscale) < 1 || std::stoi(downscale) > 64)
    throw Error(state_path, "metadata downscale '" + downscale.substr(0, 20) + "' is not a factor in 1..64");
  data.downscale = std::stoi(downscale);
  data.normalize_poses = PoseNormalization::None;  // the state's own transform applies (below)
  data.inputs.clear();
  const bool state_size = data.size.first == 0;
  if (state_size) {
    const std::string size = metadata_or(metadata, "height", "") + "x" + metadata_or(metadata, "width", "");
    int h = 0, w = 0;
    if (!parse_image_size(size, h, w) || h % patch || w % patch)
      throw Error(state_path, "metadata height/width '" + size.substr(0, 40) + "' is not a size in 1.." +
                                  std::to_string(kMaxImageSide) + " divisible by the patch size " +
                                  std::to_string(patch) + " (pass --size)");
    data.size = {h, w};
  }
  SceneSelection selection = select_scene_views(data, patch);
  if (state_size) selection.size_rule = "the state's size";
  selection.pose = pose_from_metadata(metadata, state_path);
  // The inputs it was encoded from (the nearest-input baseline, snapping in the viewer).
  try {
    selection.inputs = nlohmann::json::parse(metadata_or(metadata, "inputs", "[]")).get<std::vector<int>>();
  } catch (const nlohmann::json::exception&) {
    throw Error(state_path, "metadata inputs is not a list of view indices");
  }
  check_recorded_inputs(metadata, selection, state_path);
  return selection;
}

void refuse_pytorch_checkpoint(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return;  // a FIFO would block; the reader names the rest
  std::ifstream file(path, std::ios::binary);
  char head[8] = {};
  file.read(head, sizeof head);
  const std::string start(head, static_cast<size_t>(file.gcount()));
  if (start.rfind("PK\x03\x04", 0) == 0 || start.rfind("\x80\x02", 0) == 0 || start.rfind("\x80\x04", 0) == 0)
    throw Error(path,
                "is a PyTorch checkpoint, not a lact model: convert it with /usr/bin/python3 -m "
                "tools.convert_checkpoint " +
                    path + " -o MODEL.safetensors (README: official checkpoints)");
}

namespace {
// What a file given as the model is instead, when it is not one: a scene state; empty otherwise.
std::string not_a_model(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return "";  // a FIFO would block
  try {
    const auto metadata = read_scene_state_metadata(path);
    if (metadata_or(metadata, "format", "").rfind("lact scene state", 0) == 0)
      return "is a scene state (from lact encode), not a model: give it as --state";
  } catch (const Error&) {
  }
  return "";
}
}  // namespace

std::string views_text(const std::vector<int>& views) {
  constexpr size_t kShown = 12;
  std::string text;
  for (size_t i = 0; i < std::min(views.size(), kShown); ++i) text += (i ? "," : "") + std::to_string(views[i]);
  if (views.size() > kShown) text += " and " + std::to_string(views.size() - kShown) + " more";
  return text;
}

std::unique_ptr<Model> load_model_for(const std::string& path, Backend& backend) {
  if (path.empty()) throw Error("--model", "no model given");
  try {
    return std::make_unique<Model>(load_model(path, backend), backend);
  } catch (const Error&) {
    refuse_pytorch_checkpoint(path);
    const std::string instead = not_a_model(path);
    if (!instead.empty()) throw Error(path, instead);
    throw;
  }
}

}  // namespace lact
