// lact.read_scene: a scene's views as arrays, read and selected the way `lact render --data` does.
#include <pybind11/stl.h>

#include <cstring>
#include <filesystem>

#include "core/image_size.h"
#include "datasets/view_selection.h"
#include "pipeline/scene_selection.h"
#include "python/arguments.h"
#include "python/arrays.h"
#include "python/bindings.h"
#include "system/error.h"

namespace lact::python {

namespace {

struct SceneArrays {
  std::string name, source, layout;
  FloatArray images, intrinsics;
  DoubleArray c2w;
  std::vector<std::string> names;
  std::vector<int> inputs, targets;
};

// The working size (0x0: the images' own), each side in 1..kMaxImageSide.
std::pair<int, int> working_size_argument(const py::object& size) {
  if (size.is_none()) return {0, 0};
  const auto hw = size_argument(size, "size", kSizeExpected);
  if (hw.first < 1 || hw.second < 1 || hw.first > kMaxImageSide || hw.second > kMaxImageSide)
    throw py::value_error("size: expected (H, W), each 1.." + std::to_string(kMaxImageSide) + ", got (" +
                          std::to_string(hw.first) + ", " + std::to_string(hw.second) + ")");
  return hw;
}

// The selection's errors in Python's words: the shared code names the CLI's flags (--inputs, ...), read_scene
// takes them as arguments. The CLI's own words stay as they are.
std::string python_words(std::string text) {
  static const std::pair<const char*, const char*> kWords[] = {{"--size HxW", "size=(H, W)"},
                                                               {"--inputs", "inputs"},
                                                               {"--targets", "targets"},
                                                               {"--size", "size"},
                                                               {"--scene", "scene"},
                                                               {"--normalize-poses", "normalize_poses"},
                                                               {"--data", "path"}};
  for (const auto& [flag, argument] : kWords)
    for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at))
      text.replace(at, std::strlen(flag), argument), at += std::strlen(argument);
  return text;
}

// A mask of another length than the scene's views: ValueError naming the argument (`failed`: the selection's
// error, when an index of the mask was out of range).
void check_mask(const Selection& selection, size_t views, const std::string& name, const std::string& failed = "") {
  if (selection.mask_size < 0 || (failed.empty() && selection.mask_size == static_cast<long long>(views))) return;
  throw py::value_error(name + ": a boolean mask of " + std::to_string(selection.mask_size) +
                        " entries, but a mask takes one entry per view of the scene (" +
                        (failed.empty() ? std::to_string(views) + " views" : failed) + ")");
}

std::string view_name(const SceneView& view, size_t index) {
  if (view.image_path.empty()) return std::to_string(index);
  return std::filesystem::path(view.image_path).stem().string();
}

SceneArrays read_scene(const py::object& path, const py::object& inputs_in, const py::object& targets_in,
                       const py::object& size, const std::string& normalize_poses, const py::object& scene) {
  const Selection inputs = selection_argument(inputs_in, "inputs"), targets = selection_argument(targets_in, "targets");
  DataOptions options;
  options.data = path_argument(path, "path"), options.inputs = inputs.text;
  options.size = working_size_argument(size);
  options.normalize_poses = parse_pose_normalization(normalize_poses, "normalize_poses");
  if (!scene.is_none() && !py::isinstance<py::str>(scene))
    throw py::type_error("scene: expected a scene's name (str) or None, got " +
                         py::str(py::type::of(scene).attr("__name__")).cast<std::string>());
  if (!scene.is_none()) options.scene = scene.cast<std::string>();
  SceneArrays out;
  std::vector<PosedImage> views;
  try {
    py::gil_scoped_release released;
    SceneSelection s = select_scene_views(options, 1, targets.text);
    check_mask(inputs, s.scene.views.size(), "inputs");  // (no Python object: no GIL needed)
    check_mask(targets, s.scene.views.size(), "targets");
    if (!s.height) s.height = s.scene.views.at(0).camera.height, s.width = s.scene.views.at(0).camera.width;
    out.inputs = s.inputs;
    out.targets = select_views(targets.text, s.scene, true, s.inputs, options.seed, "--targets");
    std::vector<int> all(s.scene.views.size());
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = static_cast<int>(i), out.names.push_back(view_name(s.scene.views[i], i));
    views = selected_views(s, all, true);
    out.name = s.scene.name, out.source = s.scene.source, out.layout = s.scene.layout;
  } catch (const Error& e) {
    const std::string text = python_words(e.what());
    // A mask longer than the scene's views names an index out of range: the mask's length is what is wrong.
    if (text.find("(inputs) is out of range") != std::string::npos) check_mask(inputs, 0, "inputs", text);
    if (text.find("(targets) is out of range") != std::string::npos) check_mask(targets, 0, "targets", text);
    throw Error(text);
  }
  std::vector<Image> images;
  std::vector<Camera> cameras;
  for (PosedImage& v : views) images.push_back(std::move(v.image)), cameras.push_back(v.camera);
  out.images = stack_images(images);
  out.intrinsics = intrinsics_array(cameras);
  out.c2w = c2w_array(cameras);
  return out;
}

std::vector<std::string> scene_names(const py::object& path_in) {
  const std::string path = path_argument(path_in, "path");
  std::vector<std::string> names;
  py::gil_scoped_release released;
  for (const Scene& s : read_scene_list(path).scenes) names.push_back(s.name);
  return names;
}

}  // namespace

void bind_scene(py::module_& m) {
  py::class_<SceneArrays> cls(m, "Scene", "A scene's views as arrays (lact.read_scene).", py::is_final());
  refuse_new(cls, "it comes from lact.read_scene");
  refuse_pickle(cls, "read it again with lact.read_scene, or pickle its arrays");
  cls.def_readonly("name", &SceneArrays::name)
      .def_readonly("source", &SceneArrays::source, "The camera file it was read from.")
      .def_readonly("layout", &SceneArrays::layout)
      .def_readonly("images", &SceneArrays::images, "(N, H, W, 3) float32 in [0, 1], every view at the working size.")
      .def_readonly("intrinsics", &SceneArrays::intrinsics, "(N, 4) float32: fx, fy, cx, cy in pixels.")
      .def_readonly("c2w", &SceneArrays::c2w, "(N, 4, 4) float64 camera-to-world, OpenCV axes.")
      .def_readonly("names", &SceneArrays::names, "Each view's image name (file stem).")
      .def_readonly("inputs", &SceneArrays::inputs, "Row indices of the selected input views.")
      .def_readonly("targets", &SceneArrays::targets, "Row indices of the selected target views.")
      .def("__repr__", [](const SceneArrays& s) {
        return "lact.Scene('" + s.name + "', " + std::to_string(s.names.size()) + " views, " +
               std::to_string(s.inputs.size()) + " inputs, " + std::to_string(s.targets.size()) + " targets)";
      });
  m.def("read_scene", &read_scene, py::arg("path"), py::arg("inputs") = "", py::arg("targets") = "rest",
        py::arg("size") = py::none(), py::arg("normalize_poses") = "none", py::arg("scene") = py::none(),
        docs::kReadScene);
  m.def("scene_names", &scene_names, py::arg("path"),
        "scene_names(path) -> list of str: the names of the scenes `path` holds (read_scene's `scene`); scenes "
        "whose files fail to read are left out.");
}

}  // namespace lact::python
