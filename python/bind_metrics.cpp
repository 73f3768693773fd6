// lact.psnr, lact.ssim, lact.lpips (the report's metrics) and lact.camera_path (the paths `lact path` writes).
#include <pybind11/stl.h>

#include <array>
#include <iterator>
#include <optional>

#include "core/camera_geometry.h"
#include "core/lpips.h"
#include "core/metrics.h"
#include "core/path_parameters.h"
#include "datasets/camera_path_io.h"
#include "kernels/backend_factory.h"
#include "pipeline/model_cache.h"
#include "python/arguments.h"
#include "python/arrays.h"
#include "python/bindings.h"
#include "system/error.h"

namespace lact::python {

namespace {

// Both images as Images of one size, or a ValueError naming the argument.
std::pair<Image, Image> image_pair(const py::object& a_in, const py::object& b_in) {
  // uint8 images (a PIL image as numpy reads it) are 8-bit, over 255, as encode takes them.
  const FloatArray a_array = pixel_array(a_in, "a"), b_array = pixel_array(b_in, "b");
  check_pixel_range(a_array, "a");
  check_pixel_range(b_array, "b");
  const Image a = image_from(a_array, "a"), b = image_from(b_array, "b");
  if (a.height != b.height || a.width != b.width)
    throw py::value_error("b: expected the shape of a (" + std::to_string(a.height) + ", " + std::to_string(a.width) +
                          ", 3), got (" + std::to_string(b.height) + ", " + std::to_string(b.width) + ", 3)");
  return {a, b};
}

// lpips's weights: a path (str, bytes, os.PathLike), or None for those `lact model fetch lpips` (net None or
// 'alex') or `lact model fetch lpips-vgg` (net 'vgg') cached, which `lact render` measures LPIPS with
// (pipeline/model_cache.h); lact.Error when none are cached, or when the file holds another backbone than `net`.
std::string lpips_weights(const py::object& weights, const py::object& net_in) {
  std::optional<LpipsNet> net;
  if (!net_in.is_none()) {
    const std::string word = py::isinstance<py::str>(net_in) ? net_in.cast<std::string>() : "";
    net = lpips_net_named(word);
    if (!net)
      throw py::value_error("net: expected 'alex' or 'vgg' (or None: the weights file's), got " +
                            py::repr(net_in).cast<std::string>());
  }
  if (!weights.is_none()) {
    const std::string path = path_argument(weights, "weights");
    const LpipsNetwork& held = lpips_network_of_file(path);
    if (net && held.net != *net)
      throw Error("net", std::string(lpips_network(*net).flag_name) + ", but " + path + " holds LPIPS weights with " +
                             held.name + " (net='" + held.flag_name + "', or None: the file says its backbone)");
    return path;
  }
  const LpipsNetwork& wanted = lpips_network(net.value_or(LpipsNet::alex));
  const std::optional<std::string> cached = cached_lpips_weights(wanted.net);
  if (!cached)
    throw Error("weights", std::string("no LPIPS weights are cached: `lact model fetch ") + wanted.cache_name +
                               "` fetches them (or pass weights=FILE, from `lact model convert --lpips BACKBONE.pth "
                               "LINEAR.pth -o FILE`)");
  return *cached;
}

// The key cameras orbit and interpolate follow, at height x width.
std::vector<Camera> key_cameras(const py::object& intrinsics_in, const py::object& c2w_in, int height, int width,
                                const std::string& kind) {
  if (intrinsics_in.is_none() || c2w_in.is_none())
    throw py::value_error("intrinsics, c2w: an " + kind + " path needs key cameras (K, 4) and (K, 4, 4)");
  const auto [intrinsics, c2w] = camera_arrays(intrinsics_in, c2w_in);
  check_shape(intrinsics, "intrinsics", {-1, 4}, "(K, 4) (fx, fy, cx, cy) or (K, 3, 3) matrices");
  check_shape(c2w, "c2w", {intrinsics.shape(0), 4, 4}, "(K, 4, 4) with K = " + std::to_string(intrinsics.shape(0)));
  return cameras_from(intrinsics, c2w, height, width);
}

// camera_path's numbers, each read as a float (TypeError for another kind of value), then checked against lact
// path's ranges (core/path_parameters.h, the rule --hfov and the others keep): ValueError naming the first outside
// its range, the range and the value as given.
PathParameters path_numbers(const std::array<py::object, 6>& given) {
  static_assert(std::size(kPathParameterFields) == 6, "one argument a field");
  PathParameters p;
  for (size_t i = 0; i < given.size(); ++i) {
    const PathParameterField& field = kPathParameterFields[i];
    p.*field.value = float_argument(given[i], field.name, path_parameter_range(field.name, p));
  }
  const std::string fault = path_parameter_fault(p);
  for (size_t i = 0; i < given.size(); ++i)
    if (fault == kPathParameterFields[i].name)
      throw py::value_error(fault + ": expected a number in " + path_parameter_range(fault, p) + ", got " +
                            py::str(given[i]).cast<std::string>());
  return p;
}

// An orbit circles the point its key cameras look at (look_at_point: where their optical axes meet), which one
// camera, or cameras whose axes are parallel, do not give: the geometry's "degenerate direction" said nothing of
// that.
std::vector<Camera> orbit(const std::vector<Camera>& keys, int frames, const PathParameters& p) {
  const std::string needed =
      "an orbit circles the point its key cameras look at, which takes at least two cameras whose optical axes "
      "meet (views of one object from around it)";
  if (keys.size() < 2)
    throw py::value_error("intrinsics, c2w: " + needed +
                          "; got 1 camera (\"interpolate\" and \"turntable\" "
                          "paths need no such point)");
  try {
    return orbit_around(keys, frames, p.radius, p.elevation);
  } catch (const Error& e) {
    throw py::value_error("intrinsics, c2w: " + needed + "; these give none (" + e.what() + ")");
  }
}

py::tuple camera_path(const std::string& kind, const py::object& frames_in, const py::object& size,
                      const py::object& intrinsics, const py::object& c2w, const py::object& hfov,
                      const py::object& min_radius, const py::object& max_radius, const py::object& elevation,
                      const py::object& radius, const py::object& smoothness) {
  const int frames = int_argument(frames_in, "frames", 1, 100000);
  const auto [height, width] = size_argument(size, "size", kSizeExpected);
  if (height < 1 || width < 1 || height > kMaxImageSide || width > kMaxImageSide)
    throw py::value_error("size: expected (H, W), each 1.." + std::to_string(kMaxImageSide));
  const PathParameters p = path_numbers({hfov, elevation, min_radius, max_radius, radius, smoothness});
  if (p.smoothness != 0 && kind != "interpolate") throw py::value_error("smoothness: only for interpolate paths");
  std::vector<Camera> path;
  if (kind == "turntable") {
    path = turntable_path(frames, width, height, p.hfov, p.min_radius, p.max_radius, p.elevation);
  } else if (kind == "orbit") {
    path = orbit(key_cameras(intrinsics, c2w, height, width, kind), frames, p);
  } else if (kind == "interpolate") {
    path = interpolate_path_frames(key_cameras(intrinsics, c2w, height, width, kind), frames, p.smoothness);
  } else {
    throw py::value_error("kind: expected 'turntable', 'orbit' or 'interpolate', got '" + kind + "'");
  }
  try {  // the cameras `lact path` would refuse to write: refused here, not later at Model.render
    validate_path_frames(path, "camera_path");
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  return py::make_tuple(intrinsics_array(path), c2w_array(path));
}

}  // namespace

void bind_metrics(py::module_& m) {
  m.def(
      "psnr",
      [](const py::object& a, const py::object& b) {
        const auto [x, y] = image_pair(a, b);
        return psnr(x, y);
      },
      py::arg("a"), py::arg("b"), docs::kPsnr);
  m.def(
      "ssim",
      [](const py::object& a, const py::object& b) {
        const auto [x, y] = image_pair(a, b);
        py::gil_scoped_release released;
        return ssim(x, y);
      },
      py::arg("a"), py::arg("b"), docs::kSsim);
  m.def(
      "lpips",
      [](const py::object& a, const py::object& b, const py::object& weights_in, const py::object& net) {
        const auto [x, y] = image_pair(a, b);
        const std::string weights = lpips_weights(weights_in, net);
        py::gil_scoped_release released;
        const std::unique_ptr<Backend> cpu = make_cpu_backend(0);  // the library's threads, as ssim's
        return Lpips(weights, *cpu).distance(x, y);                // Error (the file, a size): RuntimeError
      },
      py::arg("a"), py::arg("b"), py::arg("weights") = py::none(), py::arg("net") = py::none(), docs::kLpips);
  m.def("camera_path", &camera_path, py::arg("kind"), py::arg("frames") = 120,
        py::arg("size") = py::make_tuple(256, 256), py::arg("intrinsics") = py::none(), py::arg("c2w") = py::none(),
        py::arg("hfov") = 50.0, py::arg("min_radius") = 1.7, py::arg("max_radius") = 3.0, py::arg("elevation") = 30.0,
        py::arg("radius") = 0.0, py::arg("smoothness") = 0.0, docs::kCameraPath);
}

}  // namespace lact::python
