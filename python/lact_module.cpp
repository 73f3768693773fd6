// The `lact` Python module: the engine's model, scene reading, metrics and camera paths (never the CLI's commands).
#include <pybind11/pybind11.h>

#include "pipeline/memory_check.h"
#include "python/bindings.h"
#include "system/error.h"

namespace {
namespace py = pybind11;

// lact.RenderMemoryError (a lact.Error): a render call the memory check refuses, its message the module's words
// (python/engine_calls.cpp) and the check's facts as attributes.
void bind_render_memory_error(py::module_& m, py::handle error) {
  static py::exception<lact::RenderMemoryError> type(m, "RenderMemoryError", error);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const lact::RenderMemoryError& e) {
      const lact::RenderMemoryShortfall& f = e.facts();
      py::object value = py::reinterpret_borrow<py::object>(type)(e.what());  // an instance, not PyErr_SetString
      value.attr("size") = py::make_tuple(f.height, f.width);
      value.attr("tokens") = f.tokens;
      value.attr("bytes_needed") = f.bytes_needed;
      value.attr("bytes_available") = f.bytes_available;
      value.attr("suggested_size") =
          f.fitting_height > 0 ? py::object(py::make_tuple(f.fitting_height, f.fitting_width)) : py::none();
      PyErr_SetObject(type.ptr(), value.ptr());
    }
  });
}
}  // namespace

PYBIND11_MODULE(lact, m) {
  m.doc() = lact::python::docs::kModule;
  // lact's one-line errors (files, fields, sizes) keep their text; lact.Error is a RuntimeError.
  const py::object error = py::register_exception<lact::Error>(m, "Error", PyExc_RuntimeError);
  bind_render_memory_error(m, error);
  lact::python::bind_model(m);
  lact::python::bind_scene(m);
  lact::python::bind_metrics(m);
  m.attr("__version__") = LACT_VERSION;
  // What `from lact import *` brings: lact.Warning stays an attribute, never a name that would hide the builtin
  // Warning (nor do the module's _private helpers come along).
  m.attr("__all__") = py::make_tuple("Error", "RenderMemoryError", "Model", "State", "Scene", "read_scene",
                                     "scene_names", "psnr", "ssim", "lpips", "camera_path");
}
