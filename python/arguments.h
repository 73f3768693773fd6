// The module's arguments that are not arrays: file paths, image sizes and the bound objects passed back in (a
// State, a Model). Each check raises the Python exception a user expects (TypeError for a wrong kind of value,
// ValueError for a wrong value), naming the argument and what it takes; none lets a bad value reach the engine.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <utility>

namespace lact::python {

namespace py = pybind11;

// A file path from a str, bytes or os.PathLike (pathlib.Path), as the bytes the file system sees (os.fsencode).
// TypeError for anything else; ValueError for a NUL character, which would cut the name where the C library
// reads it (so "a.safetensors\0x" must never open "a.safetensors").
std::string path_argument(const py::handle& value, const std::string& name);

// (H, W) from a sequence of two integers (a tuple, a list, a numpy array of ints; floats holding whole numbers, as
// np.array([64., 64.]), too) or a str "HxW" (or "N" for NxN, as --size reads it): TypeError for another kind of
// value or entry, ValueError for another length, a float that is no whole number, an integer beyond int's range or
// a str that is no size, each naming `name` and `expected` (how the message states what it takes, kSizeExpected).
// Range checks are the caller's.
std::pair<int, int> size_argument(const py::handle& value, const std::string& name, const std::string& expected);

// How a size's message states what it takes (render, camera_path, read_scene alike).
inline constexpr const char* kSizeExpected = "(H, W), two integers, or \"HxW\"";

// A view selection (read_scene's inputs, targets): a str in the CLI's words ("0-7", "uniform:8", "rest") as it
// is, or a sequence of view indices (a list, a tuple, a range, a 1-D numpy array of ints) as "i,j,k", or a
// boolean mask (a 1-D numpy bool array, a list of bools) as its True entries' indices (np.flatnonzero) with its
// length in `mask_size` (-1: no mask), which the caller checks against the scene's views; TypeError for another
// kind of value, ValueError for a negative index or a mask of several dimensions, each naming `name` (and the entry).
struct Selection {
  std::string text;
  long long mask_size = -1;
};
Selection selection_argument(const py::handle& value, const std::string& name);

// An integer argument (a Python int, or numpy's integers: operator.index; never a bool) in [low, high]:
// TypeError for another kind of value, ValueError for one outside the range (2**70 too, where pybind11's int
// would raise its TypeError listing the signatures), each naming `name` and the range.
int int_argument(const py::handle& value, const std::string& name, int low, int high);

// A number argument (a float, an int, numpy's numbers and 0-d arrays: float()) as a double, checked by the caller
// against `range` (how the message states it): TypeError "NAME: expected a number in RANGE, got TYPE" for a bool
// (True would be read as 1), a str, a sequence (a list, a 1-element array) or another kind of value. An int beyond
// a double's range is +-infinity, outside any range, where pybind11's float would raise its TypeError.
double float_argument(const py::handle& value, const std::string& name, const std::string& range);

// A bound object passed as an argument (`model`, `state`): TypeError naming the argument when it is None, whose
// holder pybind11 would hand over as a null pointer.
template <typename T>
const std::shared_ptr<T>& required(const std::shared_ptr<T>& object, const std::string& name,
                                   const std::string& expected) {
  if (!object) throw py::type_error(name + ": expected " + expected + ", got None");
  return object;
}

// Makes `cls` (a bound class whose objects only the module makes: lact.State, lact.Scene) refuse T.__new__(T):
// pybind11 would otherwise hand out an object with no C++ value behind it (also through unpickling, which calls
// __new__), and every method would meet a null pointer. `made_by` says where its objects come from.
void refuse_new(py::handle cls, const std::string& made_by);

// Makes `cls` refuse pickling and copy.copy with a TypeError saying how to keep one (`instead`): its objects
// hold engine memory, not Python values.
void refuse_pickle(py::handle cls, const std::string& instead);

}  // namespace lact::python
