// numpy <-> engine values for the Python module: the argument checks (TypeError for a wrong dtype, ValueError for
// a wrong shape or a non-finite value, each naming the argument and what was expected) and the conversions.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "core/camera.h"
#include "core/pixel_view.h"

namespace lact::python {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

// `value` as a C-contiguous float32 array: the object itself when it already is one (no copy), else converted once
// (another order, float64, anything numpy.asarray takes: lists, torch CPU tensors). Non-float dtypes are a TypeError;
// NaN or infinity a ValueError.
FloatArray float_array(const py::handle& value, const std::string& name);
// The same in float64, for camera poses: the engine holds poses in double (float32 poses are used exactly too).
DoubleArray double_array(const py::handle& value, const std::string& name);

// Input images as the engine reads them in place: float_array(value, name), whose buffer is the caller's own
// when it is a C-contiguous float32 array (no copy anywhere: core/pixel_view.h), else converted once.
FloatArray pixel_array(const py::handle& value, const std::string& name);
// Images are floats in [0, 1] (what read_scene reads and render gives). Values well outside, beyond the overshoot
// of a resampling filter (kPixelSlack), are an 8-bit image not yet divided by 255 or one in [-1, 1]: a ValueError
// naming `name` that says how to convert, rather than a state or a score silently computed from them.
inline constexpr float kPixelSlack = 0.1f;
void check_pixel_range(const FloatArray& images, const std::string& name);
// pixel_array's (N, H, W, 3) result described in place.
PixelView pixel_view(const FloatArray& array);
// Where render writes: a new (N, H, W, 3) or (H, W, 3) float32 array when `out` is None, else `out` itself,
// which must be a C-contiguous writeable float32 array of that shape (TypeError / ValueError naming "out").
FloatArray output_array(const py::object& out, const std::vector<py::ssize_t>& shape);

// ValueError unless `array` has `shape` (-1: any extent); `expected` is how the message states it, "(N, H, W, 3)".
void check_shape(const py::array& array, const std::string& name, const std::vector<py::ssize_t>& shape,
                 const std::string& expected);

// Intrinsics as rows fx, fy, cx, cy: (N, 4) and (4,) as given, OpenCV's matrices K = [[fx, 0, cx], [0, fy, cy],
// [0, 0, 1]] as (N, 3, 3) and (3, 3) read into (N, 4) and (4,). A K a lact camera cannot hold (a skew, a last row
// other than 0 0 1) is a ValueError naming the matrix and the entry: dropping it would render another camera.
FloatArray intrinsic_rows(const FloatArray& intrinsics, const std::string& name);

// Camera-to-world poses (N, 4, 4) and (4, 4) as given; the 3x4 form (N, 3, 4) and (3, 4) (nerfstudio's
// camera_to_worlds, [R | t]) with the row 0 0 0 1 added.
DoubleArray pose_matrices(const DoubleArray& c2w);

// A call's camera arguments as float32 intrinsics and float64 poses, each in the form above (rows, 4x4).
std::pair<FloatArray, DoubleArray> camera_arrays(const py::handle& intrinsics, const py::handle& c2w);

// Cameras from intrinsics (N, 4) = fx, fy, cx, cy in pixels at height x width and c2w (N, 4, 4), OpenCV axes;
// a camera lact refuses (a pose that is not rigid, focal lengths out of range) is a ValueError naming the row.
std::vector<Camera> cameras_from(const FloatArray& intrinsics, const DoubleArray& c2w, int height, int width);

// An (H, W, 3) array as an Image (one copy) and back.
Image image_from(const FloatArray& array, const std::string& name);
// (N, H, W, 3) from images of one size.
FloatArray stack_images(const std::vector<Image>& images);
FloatArray image_array(const Image& image);

// Intrinsics (N, 4) and c2w (N, 4, 4) of cameras (for read_scene and camera_path).
FloatArray intrinsics_array(const std::vector<Camera>& cameras);
DoubleArray c2w_array(const std::vector<Camera>& cameras);

}  // namespace lact::python
