#include "python/arguments.h"

#include <pybind11/numpy.h>

#include <climits>
#include <cmath>

#include "core/image_size.h"
#include "system/error.h"

namespace lact::python {

namespace {

std::string type_name(const py::handle& value) { return py::str(py::type::of(value).attr("__name__")); }

// `given` as a Python int (numpy's integers too: operator.index), or TypeError(`wrong_kind`) for a bool or
// another kind of value.
py::object python_int(const py::handle& given, const std::string& wrong_kind) {
  if (!PyIndex_Check(given.ptr()) || py::isinstance<py::bool_>(given)) throw py::type_error(wrong_kind);
  py::object value = py::reinterpret_steal<py::object>(PyNumber_Index(given.ptr()));
  if (!value) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();  // an array of several values, say: numpy's own message would not name the argument
    throw py::type_error(wrong_kind);
  }
  return value;
}

// A Python int's value when it lies in [low, high], else nothing (also beyond long long's range).
bool int_in_range(const py::object& value, long long low, long long high, int& out) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow || v < low || v > high) return false;
  out = static_cast<int>(v);
  return true;
}

// A float (Python's, numpy's float16/32/64 scalars) holding a whole number, as an int; ValueError for another one.
py::object whole_number(const py::handle& entry, const std::string& name, const std::string& expected) {
  const double v = py::cast<double>(entry);
  if (!std::isfinite(v) || v != std::floor(v))
    throw py::value_error(name + ": expected " + expected + ", got an entry " + py::str(entry).cast<std::string>() +
                          " (not a whole number)");
  if (std::abs(v) > INT_MAX)
    throw py::value_error(name + ": expected " + expected + ", got an entry " + py::str(entry).cast<std::string>() +
                          " (out of range)");
  return py::int_(static_cast<long long>(v));
}

bool is_float(const py::handle& value) {
  return PyFloat_Check(value.ptr()) || py::isinstance(value, py::module_::import("numpy").attr("floating"));
}

// One entry of a size: an integer in int's range (or a float holding one: np.array([64., 64.])), else the
// exception.
int size_entry(const py::handle& entry, const std::string& name, const std::string& expected) {
  const py::object value =
      is_float(entry)
          ? whole_number(entry, name, expected)
          : python_int(entry, name + ": expected " + expected + ", got an entry of type " + type_name(entry));
  int v = 0;
  if (!int_in_range(value, INT_MIN, INT_MAX, v))
    throw py::value_error(name + ": expected " + expected + ", got " + py::str(value).cast<std::string>() +
                          " (out of range)");
  return v;
}

}  // namespace

std::string path_argument(const py::handle& value, const std::string& name) {
  py::object encoded;
  try {
    encoded = py::module_::import("os").attr("fsencode")(value);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    throw py::type_error(name + ": expected a path (str, bytes or os.PathLike), got " + type_name(value));
  }
  std::string path = encoded.cast<std::string>();  // bytes: every byte kept, NUL included
  const size_t nul = path.find('\0');
  if (nul != std::string::npos)
    throw py::value_error(name + ": the path holds a NUL character (at byte " + std::to_string(nul) +
                          "), which no file name can");
  return path;
}

int int_argument(const py::handle& value, const std::string& name, int low, int high) {
  const std::string expected = "expected an integer from " + std::to_string(low) + " to " + std::to_string(high);
  const py::object number = python_int(value, name + ": " + expected + ", got " + type_name(value));
  int v = 0;
  if (!int_in_range(number, low, high, v))
    throw py::value_error(name + ": " + expected + ", got " + py::str(number).cast<std::string>());
  return v;
}

double float_argument(const py::handle& value, const std::string& name, const std::string& range) {
  const std::string wrong_kind = name + ": expected a number in " + range + ", got " + type_name(value);
  if (py::isinstance<py::bool_>(value)) throw py::type_error(wrong_kind);
  if (PyObject_Length(value.ptr()) >= 0) throw py::type_error(wrong_kind);  // a str, a list, an array of values
  PyErr_Clear();  // no length: a number, as numpy's scalars and 0-d arrays
  const double v = PyFloat_AsDouble(value.ptr());
  if (v != -1.0 || !PyErr_Occurred()) return v;
  if (PyErr_ExceptionMatches(PyExc_OverflowError)) {  // an int beyond double's range
    PyErr_Clear();
    const int negative = PyObject_RichCompareBool(value.ptr(), py::int_(0).ptr(), Py_LT);
    if (negative < 0) throw py::error_already_set();
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
  PyErr_Clear();
  throw py::type_error(wrong_kind);
}

namespace {

// A boolean mask (a numpy bool array, a list of bools) as the indices of its True entries (np.flatnonzero), with
// its length; false when `value` is no mask.
bool mask_selection(const py::handle& value, const std::string& name, Selection& out) {
  py::object numpy = py::module_::import("numpy");
  if (py::isinstance<py::array>(value)) {
    const py::array array = py::reinterpret_borrow<py::array>(value);
    if (array.dtype().kind() != 'b') return false;
    if (array.ndim() != 1)
      throw py::value_error(name + ": a boolean mask is one entry per view of the scene (1-D), got " +
                            std::to_string(array.ndim()) + " dimensions");
  } else if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
    const py::sequence entries = py::reinterpret_borrow<py::sequence>(value);
    if (entries.size() == 0) return false;
    for (const py::handle entry : entries)
      if (!py::isinstance<py::bool_>(entry) && !py::isinstance(entry, numpy.attr("bool_"))) return false;
  } else {
    return false;
  }
  const py::array mask = numpy.attr("asarray")(value, py::arg("dtype") = "bool");
  out.mask_size = mask.shape(0);
  const py::sequence indices = numpy.attr("flatnonzero")(mask).attr("tolist")();
  for (size_t i = 0; i < indices.size(); ++i) out.text += (i ? "," : "") + py::str(indices[i]).cast<std::string>();
  return true;
}

}  // namespace

Selection selection_argument(const py::handle& value, const std::string& name) {
  Selection out;
  if (py::isinstance<py::str>(value)) return {value.cast<std::string>(), -1};
  if (mask_selection(value, name, out)) return out;
  if (py::isinstance<py::bytes>(value) || !PySequence_Check(value.ptr()))
    throw py::type_error(name +
                         ": expected a selection like \"0-7\", \"uniform:8\" or \"rest\", or a sequence of "
                         "view indices, got " +
                         type_name(value));
  const py::sequence entries = py::reinterpret_borrow<py::sequence>(value);
  for (size_t i = 0; i < entries.size(); ++i)
    out.text +=
        (i ? "," : "") + std::to_string(int_argument(entries[i], name + "[" + std::to_string(i) + "]", 0, INT_MAX));
  return out;
}

std::pair<int, int> size_argument(const py::handle& value, const std::string& name, const std::string& expected) {
  if (py::isinstance<py::str>(value)) {  // "HxW" (or "N" for NxN) as every size flag reads it
    const std::string text = value.cast<std::string>();
    try {
      return parse_size(text.empty() ? "-" : text, name);
    } catch (const Error&) {
      throw py::value_error(name + ": expected " + expected + ", got '" + text.substr(0, 40) + "'");
    }
  }
  if (py::isinstance<py::bytes>(value) || !PySequence_Check(value.ptr()))
    throw py::type_error(name + ": expected " + expected + ", got " + type_name(value));
  const py::sequence entries = py::reinterpret_borrow<py::sequence>(value);
  const py::ssize_t count = PySequence_Size(value.ptr());
  if (count < 0) throw py::error_already_set();
  if (count != 2) throw py::value_error(name + ": expected " + expected + ", got " + std::to_string(count) + " values");
  return {size_entry(entries[0], name, expected), size_entry(entries[1], name, expected)};
}

void refuse_new(py::handle cls, const std::string& made_by) {
  const std::string what = "lact." + py::str(cls.attr("__name__")).cast<std::string>();
  const std::string message = what + " cannot be made directly (" + what + "() or __new__, unpickling): " + made_by;
  cls.attr("__new__") = py::staticmethod(
      py::cpp_function([message](const py::args&, const py::kwargs&) -> py::object { throw py::type_error(message); },
                       py::name("__new__")));
}

void refuse_pickle(py::handle cls, const std::string& instead) {
  const std::string what = "lact." + py::str(cls.attr("__name__")).cast<std::string>();
  const std::string message = what + " cannot be pickled or copied: " + instead;
  cls.attr("__reduce__") =
      py::cpp_function([message](const py::object&) -> py::object { throw py::type_error(message); },
                       py::name("__reduce__"), py::is_method(cls));
}

}  // namespace lact::python
