#include "python/arrays.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "system/error.h"

namespace lact::python {

namespace {

// `digits` significant digits: 9 tell every float32 apart (1 - 1e-7 is not "1").
std::string number_text(double value, int digits = 6) {
  char text[40];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

// How far a K's fixed entries may be from 0 and 1 (relative): float rounding, not a camera lact cannot hold.
constexpr double kMatrixTolerance = 1e-6;

std::string shape_text(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) text += (i ? ", " : "") + std::to_string(array.shape(i));
  return text + (array.ndim() == 1 ? ",)" : ")");
}

// `value` as a numpy array (np.asarray for a list, a torch tensor, ...). Where that fails (a ragged list, a
// tensor that requires grad, a dtype numpy lacks) the exception names the argument, with the object's own words:
// a ValueError stays one, anything else is a TypeError; a MemoryError (and KeyboardInterrupt) come out as they are.
py::array as_array(const py::handle& value, const std::string& name) {
  if (py::isinstance<py::array>(value)) return py::reinterpret_borrow<py::array>(value);
  try {
    return py::module_::import("numpy").attr("asarray")(value);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_Exception) || e.matches(PyExc_MemoryError)) throw;
    const std::string text = name + ": cannot be read as a numpy array (" +
                             py::str(e.type().attr("__name__")).cast<std::string>() + ": " +
                             py::str(e.value()).cast<std::string>() + ")";
    py::raise_from(e, e.matches(PyExc_ValueError) ? PyExc_ValueError : PyExc_TypeError, text.c_str());
    throw py::error_already_set();
  }
}

// How a TypeError states what converted<T> takes.
template <typename T>
const char* expected_dtype(bool integers);
template <>
const char* expected_dtype<float>(bool integers) {
  return integers ? "a float32 array (float64, float16 and integer arrays are converted once)"
                  : "a float32 array (float64 and float16 are converted once)";
}
template <>
const char* expected_dtype<double>(bool integers) {
  return integers ? "a float64 array (float32, float16 and integer arrays are converted once)"
                  : "a float64 array (float32 and float16 are converted once)";
}

// The refusal of entry `i` of `given`, not finite once converted to `type`: a finite value beyond the type's
// `most` (an intrinsic of 1e300 in float64, converted to float32) is named as such, not as the infinity it became.
py::value_error not_finite_error(const py::array& given, py::ssize_t i, const char* type, double most,
                                 const std::string& name) {
  const std::string at = " (at flat index " + std::to_string(i) + ")";
  const double value = py::float_(given.attr("flat")[py::int_(i)]).cast<double>();
  if (std::isfinite(value))
    return py::value_error(name + ": value " + number_text(value) + at + " is beyond the +-" + number_text(most, 3) +
                           " of " + type + ", which it is converted to");
  return py::value_error(name + ": holds NaN or infinity" + at);
}

// `value` as a C-contiguous array of T, converted once unless it already is one; integer arrays too when
// `integers` (cameras: np.eye(4, dtype=int) is a pose), never for images, where an integer dtype other than uint8
// says the values are not in [0, 1].
template <typename T>
py::array_t<T, py::array::c_style | py::array::forcecast> converted(const py::handle& value, const std::string& name,
                                                                    bool integers = false) {
  const py::array array = as_array(value, name);
  const char kind = array.dtype().kind();
  if (kind != 'f' && !(integers && (kind == 'i' || kind == 'u')))
    throw py::type_error(name + ": expected " + expected_dtype<T>(integers) + ", got dtype " +
                         py::str(array.dtype()).cast<std::string>());
  // The same array when it already has T's dtype and C order: no copy. numpy's own exception (a MemoryError
  // for a conversion too large) comes out as itself (array_t::ensure() would clear it and return null).
  py::array_t<T, py::array::c_style | py::array::forcecast> values(array);
  const T* data = values.data();
  for (py::ssize_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(data[i]))
      throw not_finite_error(array, i, std::is_same_v<T, float> ? "float32" : "float64", std::numeric_limits<T>::max(),
                             name);
  return values;
}

}  // namespace

FloatArray float_array(const py::handle& value, const std::string& name) { return converted<float>(value, name); }

DoubleArray double_array(const py::handle& value, const std::string& name) { return converted<double>(value, name); }

FloatArray pixel_array(const py::handle& value, const std::string& name) {
  // 8-bit images (np.asarray of a PIL image) are taken as they are meant: 0..255 over 255. Only the dtype
  // uint8 (as numpy reads the value: a torch uint8 tensor too) says so; a float array out of [0, 1] stays an
  // error (check_pixel_range).
  const py::array given = as_array(value, name);
  if (given.dtype().is(py::dtype::of<uint8_t>())) {
    py::object numpy = py::module_::import("numpy");
    py::object scaled = numpy.attr("divide")(given, numpy.attr("float32")(255), py::arg("dtype") = "float32");
    return float_array(scaled, name);
  }
  FloatArray array = float_array(given, name);
  if (reinterpret_cast<uintptr_t>(array.data()) % alignof(float) == 0) return array;
  // A float32 buffer at an odd address (numpy allows one over a bytes object): copied once, aligned.
  return py::module_::import("numpy").attr("array")(array, py::arg("dtype") = "float32", py::arg("order") = "C");
}

void check_pixel_range(const FloatArray& images, const std::string& name) {
  const float* values = images.data();
  float low = 0, high = 0;
  for (py::ssize_t i = 0; i < images.size(); ++i) low = std::min(low, values[i]), high = std::max(high, values[i]);
  if (high > 1 + kPixelSlack)
    throw py::value_error(name + ": values up to " + number_text(high) +
                          ", but lact takes float images in [0, 1]: divide 8-bit images by 255");
  if (low < -kPixelSlack)
    throw py::value_error(name + ": values down to " + number_text(low) +
                          ", but lact takes float images in [0, 1]: map images in [-1, 1] with (x + 1) / 2");
}

PixelView pixel_view(const FloatArray& array) {
  PixelView view;
  view.data = array.data();
  view.count = array.shape(0), view.height = array.shape(1), view.width = array.shape(2);
  for (int i = 0; i < 4; ++i) view.strides[i] = array.strides(i) / static_cast<py::ssize_t>(sizeof(float));
  return view;
}

FloatArray output_array(const py::object& out, const std::vector<py::ssize_t>& shape) {
  if (out.is_none()) return FloatArray(shape);
  if (!py::isinstance<py::array_t<float>>(out))
    throw py::type_error("out: expected a float32 numpy array, got " +
                         (py::isinstance<py::array>(out) ? "dtype " + py::str(out.attr("dtype")).cast<std::string>()
                                                         : py::str(py::type::of(out)).cast<std::string>()));
  auto array = py::reinterpret_borrow<py::array>(out);
  std::string expected = "(";
  for (size_t i = 0; i < shape.size(); ++i) expected += (i ? ", " : "") + std::to_string(shape[i]);
  check_shape(array, "out", shape, expected + ")");
  if (!(array.flags() & py::array::c_style) || !array.writeable())
    throw py::value_error("out: expected a C-contiguous writeable array (render writes its images in place)");
  return py::reinterpret_borrow<FloatArray>(out);
}

void check_shape(const py::array& array, const std::string& name, const std::vector<py::ssize_t>& shape,
                 const std::string& expected) {
  bool ok = array.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 ? array.shape(i) > 0 : array.shape(i) == shape[i];
  if (!ok)
    throw py::value_error(name + ": expected shape " + expected + ", got " + shape_text(array) +
                          (array.size() == 0 && array.ndim() == static_cast<py::ssize_t>(shape.size())
                               ? ": an empty array (every extent must be at least 1)"
                               : ""));
}

FloatArray intrinsic_rows(const FloatArray& intrinsics, const std::string& name) {
  const py::ssize_t d = intrinsics.ndim();
  if (d < 2 || d > 3 || intrinsics.shape(d - 1) != 3 || intrinsics.shape(d - 2) != 3) return intrinsics;
  const py::ssize_t count = d == 3 ? intrinsics.shape(0) : 1;
  FloatArray rows(d == 3 ? std::vector<py::ssize_t>{count, 4} : std::vector<py::ssize_t>{4});
  static const char* const kFixed[] = {"[0, 1] (skew)", "[1, 0]", "[2, 0]", "[2, 1]", "[2, 2]"};
  for (py::ssize_t i = 0; i < count; ++i) {
    const float* k = intrinsics.data() + 9 * i;
    const float fixed[] = {k[1], k[3], k[6], k[7], k[8]}, wanted[] = {0, 0, 0, 0, 1};
    // Rounding (np.linalg.inv(np.linalg.inv(K)), a float32 copy of a float64 K) is no skew: the top row's entries
    // are measured against the focal lengths, the last row's against its 1.
    const double scale[] = {std::max({std::abs(k[0]), std::abs(k[4]), 1.0f}),
                            std::max({std::abs(k[0]), std::abs(k[4]), 1.0f}), 1, 1, 1};
    const std::string matrix = d == 3 ? name + "[" + std::to_string(i) + "]" : name;
    for (int j = 0; j < 5; ++j)
      if (!(std::abs(double(fixed[j]) - wanted[j]) <= kMatrixTolerance * scale[j]))
        throw py::value_error(matrix + ": entry " + kFixed[j] + " of the 3x3 K matrix is " + number_text(fixed[j], 9) +
                              ", not " + number_text(wanted[j]) +
                              ": lact's cameras are [[fx, 0, cx], [0, fy, cy], [0, 0, 1]] (or give rows fx, fy, "
                              "cx, cy)");
    float* row = rows.mutable_data() + 4 * i;
    row[0] = k[0], row[1] = k[4], row[2] = k[2], row[3] = k[5];
  }
  return rows;
}

DoubleArray pose_matrices(const DoubleArray& c2w) {
  const py::ssize_t d = c2w.ndim();
  if (d < 2 || d > 3 || c2w.shape(d - 2) != 3 || c2w.shape(d - 1) != 4) return c2w;
  const py::ssize_t count = d == 3 ? c2w.shape(0) : 1;
  DoubleArray full(d == 3 ? std::vector<py::ssize_t>{count, 4, 4} : std::vector<py::ssize_t>{4, 4});
  for (py::ssize_t i = 0; i < count; ++i) {
    double* m = full.mutable_data() + 16 * i;
    std::copy_n(c2w.data() + 12 * i, 12, m);
    m[12] = m[13] = m[14] = 0, m[15] = 1;
  }
  return full;
}

std::pair<FloatArray, DoubleArray> camera_arrays(const py::handle& intrinsics, const py::handle& c2w) {
  return {intrinsic_rows(converted<float>(intrinsics, "intrinsics", true), "intrinsics"),
          pose_matrices(converted<double>(c2w, "c2w", true))};
}

std::vector<Camera> cameras_from(const FloatArray& intrinsics, const DoubleArray& c2w, int height, int width) {
  const py::ssize_t count = intrinsics.shape(0);
  if (c2w.shape(0) != count)
    throw py::value_error("c2w: " + std::to_string(c2w.shape(0)) + " cameras but intrinsics has " +
                          std::to_string(count));
  std::vector<Camera> cameras(count);
  for (py::ssize_t i = 0; i < count; ++i) {
    Camera& c = cameras[i];
    c.height = height, c.width = width;
    const float* k = intrinsics.data(i);
    const double* pose = c2w.data(i);
    for (int j = 0; j < 16; ++j) c.c2w[j] = pose[j];
    try {
      set_intrinsics(c, k[0], k[1], k[2], k[3], "intrinsics[" + std::to_string(i) + "]");
      c.validate("camera " + std::to_string(i) + " (intrinsics, c2w)");
    } catch (const Error& e) {
      throw py::value_error(e.what());
    }
  }
  return cameras;
}

Image image_from(const FloatArray& array, const std::string& name) {
  check_shape(array, name, {-1, -1, 3}, "(H, W, 3)");
  Image image;
  image.height = static_cast<int>(array.shape(0)), image.width = static_cast<int>(array.shape(1));
  image.rgb.assign(array.data(), array.data() + array.size());
  return image;
}

FloatArray stack_images(const std::vector<Image>& images) {
  const py::ssize_t h = images.empty() ? 0 : images[0].height, w = images.empty() ? 0 : images[0].width;
  FloatArray out({static_cast<py::ssize_t>(images.size()), h, w, py::ssize_t{3}});
  for (size_t i = 0; i < images.size(); ++i)
    std::memcpy(out.mutable_data(i), images[i].rgb.data(), images[i].rgb.size() * sizeof(float));
  return out;
}

FloatArray image_array(const Image& image) {
  FloatArray out({py::ssize_t{image.height}, py::ssize_t{image.width}, py::ssize_t{3}});
  std::memcpy(out.mutable_data(), image.rgb.data(), image.rgb.size() * sizeof(float));
  return out;
}

FloatArray intrinsics_array(const std::vector<Camera>& cameras) {
  FloatArray out({static_cast<py::ssize_t>(cameras.size()), py::ssize_t{4}});
  for (size_t i = 0; i < cameras.size(); ++i) {
    float* k = out.mutable_data(i);
    k[0] = cameras[i].fx, k[1] = cameras[i].fy, k[2] = cameras[i].cx, k[3] = cameras[i].cy;
  }
  return out;
}

DoubleArray c2w_array(const std::vector<Camera>& cameras) {
  DoubleArray out({static_cast<py::ssize_t>(cameras.size()), py::ssize_t{4}, py::ssize_t{4}});
  for (size_t i = 0; i < cameras.size(); ++i)
    for (int j = 0; j < 16; ++j) out.mutable_data(i)[j] = cameras[i].c2w[j];
  return out;
}

}  // namespace lact::python
