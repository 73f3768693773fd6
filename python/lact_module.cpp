// The `lact` Python module: the engine's model, scene reading, metrics and camera paths (never the CLI's commands).
#include <pybind11/pybind11.h>

#include "python/bindings.h"
#include "system/error.h"

PYBIND11_MODULE(lact, m) {
  namespace py = pybind11;
  m.doc() = lact::python::docs::kModule;
  // lact's one-line errors (files, fields, sizes) keep their text; lact.Error is a RuntimeError.
  py::register_exception<lact::Error>(m, "Error", PyExc_RuntimeError);
  lact::python::bind_model(m);
  lact::python::bind_scene(m);
  lact::python::bind_metrics(m);
  m.attr("__version__") = LACT_VERSION;
  // What `from lact import *` brings: lact.Warning stays an attribute, never a name that would hide the builtin
  // Warning (nor do the module's _private helpers come along).
  m.attr("__all__") = py::make_tuple("Error", "Model", "State", "Scene", "read_scene", "scene_names", "psnr", "ssim",
                                     "lpips", "camera_path");
}
