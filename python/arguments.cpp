#include "python/arguments.h"

#include <climits>

namespace lact::python {

namespace {

std::string type_name(const py::handle& value) { return py::str(py::type::of(value).attr("__name__")); }

// One entry of a size: an integer in int's range (numpy's integers too: operator.index), else the exception.
int size_entry(const py::handle& entry, const std::string& name, const std::string& expected) {
  if (!PyIndex_Check(entry.ptr()) || py::isinstance<py::bool_>(entry))
    throw py::type_error(name + ": expected " + expected + ", got an entry of type " + type_name(entry));
  const py::object value = py::reinterpret_steal<py::object>(PyNumber_Index(entry.ptr()));
  if (!value) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();  // an array of several values, say: numpy's own message would not name the argument
    throw py::type_error(name + ": expected " + expected + ", got an entry of type " + type_name(entry));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow || v < INT_MIN || v > INT_MAX)
    throw py::value_error(name + ": expected " + expected + ", got " + py::str(value).cast<std::string>() +
                          " (out of range)");
  return static_cast<int>(v);
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

std::pair<int, int> size_argument(const py::handle& value, const std::string& name, const std::string& expected) {
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) || !PySequence_Check(value.ptr()))
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
