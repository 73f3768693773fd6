// lact.Model and lact.State: encode views into a scene state, render cameras from it, save and load states.
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>

#include "core/scene_state_io.h"
#include "datasets/preprocess.h"
#include "kernels/backend_factory.h"
#include "pipeline/guard_rails.h"
#include "python/arguments.h"
#include "python/arrays.h"
#include "python/bindings.h"
#include "python/engine_calls.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/thread_limit.h"

namespace lact::python {

namespace {

// Thrown between encode's layers or render's layers and batches when a signal handler raised (Ctrl-C:
// KeyboardInterrupt); the Python error is set.
struct Interrupted {};

// Runs Python's signal handlers between layers (with the GIL, briefly): Ctrl-C stops a long encode or render there.
void check_signals() {
  py::gil_scoped_acquire held;
  if (PyErr_CheckSignals() != 0) throw Interrupted{};
}

struct State {
  std::shared_ptr<Engine> engine;  // the model it belongs to (saving needs its weights; rendering, its backend)
  SceneState state;
};

// lact.Warning: the category of the guard rails' warnings (a UserWarning), made once with the module.
PyObject* warning_category = nullptr;

// The guard rails of lact render (pipeline/guard_rails.h) on the views given to encode, in its words, as
// warnings.warn(text, lact.Warning): the size against the training size, intrinsics no camera has, cameras at one
// point, the cameras' layout and distances.
void warn_out_of_regime(const Engine& engine, const std::vector<Camera>& cameras) {
  if (cameras.empty()) return;
  const ModelWeights& model = engine.model().weights();
  const std::string coincident = coincident_cameras_warning(cameras);
  const std::vector<std::string> found = {
      size_warning(model, cameras[0].height, cameras[0].width, "resize the images to about the training size"),
      intrinsics_warning(cameras, {}), coincident,
      model.trained_kind.empty() || !coincident.empty() ? "" : camera_kind_warning(model.trained_kind, cameras),
      model.trained_kind.empty() ? "" : camera_distance_warning(model.trained_kind, cameras, false)};
  for (const std::string& text : found)
    if (!text.empty() && PyErr_WarnEx(warning_category, text.c_str(), 1) != 0) throw py::error_already_set();
}

// Intrinsics made for another size: a principal point far from the centre of the image render makes (camera_path's
// default 256x256 cameras rendered at a 64x64 state's size, intrinsics made for twice the size: cx = width) renders
// a corner of the view without a word. The guard rail's rule (pipeline/guard_rails.h, kPrincipalMiddle) in render's
// words. Once a call.
void warn_principal_point_off_centre(const std::vector<Camera>& cameras) {
  for (size_t i = 0; i < cameras.size(); ++i) {
    const Camera& c = cameras[i];
    const double off = principal_point_off_centre(c);
    if (off <= kPrincipalMiddle) continue;
    char text[500];
    std::snprintf(text, sizeof text,
                  "intrinsics[%zu]: principal point (cx, cy) = (%g, %g) lies %.0f%% of a side from the centre of the "
                  "%dx%d image render makes (a camera's is near (%g, %g)): intrinsics are in pixels at the rendered "
                  "size (pass size=(H, W) they were made for, or scale fx, fy, cx, cy to this size)",
                  i, c.cx, c.cy, 100 * off, c.height, c.width, 0.5 * c.width, 0.5 * c.height);
    if (PyErr_WarnEx(warning_category, text, 1) != 0) throw py::error_already_set();
    return;
  }
}

// device and precision named as Python passed them (ValueError), before any backend is made: the backend's own
// refusal would name the CLI's --device.
void check_device_arguments(const std::string& device, const std::string& precision) {
  const std::vector<std::string> names = backend_names();
  if (std::find(names.begin(), names.end(), device) == names.end()) {
    std::string devices;
    for (const std::string& name : names) devices += (devices.empty() ? "'" : ", '") + name + "'";
    throw py::value_error("device: '" + device.substr(0, 40) + "' is not a device of this build (" + devices + ")");
  }
  try {
    parse_precision(precision);
  } catch (const std::invalid_argument&) {
    throw py::value_error("precision: '" + precision.substr(0, 40) + "' is not 'fp32', 'tf32' or 'bf16'");
  }
}

// The engine's refusal of a size the patch does not divide, with the cure in Python's words: read_scene reads any
// size the files have (a 270x480 video frame), and its size= reads the views at one the patch divides.
void check_patch_divides(const Engine& engine, int height, int width) {
  const int patch = engine.model().config().patch_size;
  if (height % patch == 0 && width % patch == 0) return;
  throw Error("input size " + std::to_string(height) + "x" + std::to_string(width) +
              " is not divisible by the patch size " + std::to_string(patch) +
              ": read the views at a size it divides, lact.read_scene(..., size=(H, W)) (" +
              nearest_sizes_text(height, width, patch) + "), or resize the images to one");
}

// threads=, cut to the CPUs this process may use with the note --threads prints (system/thread_limit.h) naming
// threads= instead, on sys.stderr (none: nothing written).
int usable_threads(int threads) {
  if (threads <= 0) return threads;  // the default: the Run picks (beside a busy machine's other work)
  std::string note;
  const int used = threads_to_use(threads, note, "threads=");
  if (!note.empty()) PySys_WriteStderr("lact: note: %s\n", note.c_str());
  return used;
}

std::shared_ptr<State> encode(const std::shared_ptr<Engine>& engine, const py::object& images_in,
                              const py::object& intrinsics_in, const py::object& c2w_in) {
  const FloatArray images = pixel_array(images_in, "images");  // held while the engine reads it
  const auto [intrinsics, c2w] = camera_arrays(intrinsics_in, c2w_in);
  check_shape(images, "images", {-1, -1, -1, 3}, "(N, H, W, 3)");
  check_pixel_range(images, "images");
  const py::ssize_t n = images.shape(0);
  check_shape(intrinsics, "intrinsics", {n, 4},
              "(N, 4) with N = " + std::to_string(n) + " (fx, fy, cx, cy) or (N, 3, 3) (K)");
  check_shape(c2w, "c2w", {n, 4, 4}, "(N, 4, 4) or (N, 3, 4) with N = " + std::to_string(n));
  check_patch_divides(*engine, static_cast<int>(images.shape(1)), static_cast<int>(images.shape(2)));
  const PixelView pixels = pixel_view(images);
  const std::vector<Camera> cameras =
      cameras_from(intrinsics, c2w, static_cast<int>(images.shape(1)), static_cast<int>(images.shape(2)));
  warn_out_of_regime(*engine, cameras);
  auto state = std::make_shared<State>();
  state->engine = engine;
  try {
    py::gil_scoped_release released;
    state->state = encode_views(*engine, cameras, pixels, check_signals);
  } catch (const Interrupted&) {
    throw py::error_already_set();  // the KeyboardInterrupt (or whatever the handler raised)
  }
  return state;
}

// (H, W) of render's images: the state's, or `size` checked against the patch.
std::pair<int, int> render_size(const Engine& engine, const State& state, const py::object& size) {
  if (size.is_none()) return {state.state.height, state.state.width};
  const auto hw = size_argument(size, "size", kSizeExpected);
  const int height = hw.first, width = hw.second, patch = engine.model().config().patch_size;
  if (height <= 0 || width <= 0 || height > kMaxImageSide || width > kMaxImageSide || height % patch || width % patch)
    throw py::value_error("size: expected (H, W), each a positive multiple of the patch size " + std::to_string(patch) +
                          ", got (" + std::to_string(height) + ", " + std::to_string(width) + ")");
  return hw;
}

// One camera as (4,) and (4, 4) gives (H, W, 3); N cameras as (N, 4) and (N, 4, 4) give (N, H, W, 3), written
// into `out` when given (the same array returned), else into one new array.
py::array render(const std::shared_ptr<Engine>& engine, const std::shared_ptr<State>& state_in,
                 const py::object& intrinsics_in, const py::object& c2w_in, const py::object& size,
                 const py::object& out_in) {
  const State& state = *required(state_in, "state", "a lact.State (from Model.encode or lact.State.load)");
  auto [intrinsics, c2w] = camera_arrays(intrinsics_in, c2w_in);
  if (state.engine != engine)
    throw py::value_error(
        "state: encoded by another lact.Model (each lact.Model(...) is a model of its own, also one opened again "
        "from the same file): encode again with this model, or save the state (state.save(path)) and read it for "
        "this model (lact.State.load(path, model))");
  const bool single = intrinsics.ndim() == 1;
  if (single) {
    check_shape(intrinsics, "intrinsics", {4}, "(4,) or (N, 4) (fx, fy, cx, cy), or K (3, 3) or (N, 3, 3)");
    check_shape(c2w, "c2w", {4, 4}, "(4, 4) or (3, 4) for one camera");
    intrinsics = intrinsics.reshape({1, 4});
    c2w = c2w.reshape({1, 4, 4});
  }
  check_shape(intrinsics, "intrinsics", {-1, 4}, "(N, 4) or (4,) (fx, fy, cx, cy), or K (N, 3, 3) or (3, 3)");
  check_shape(c2w, "c2w", {intrinsics.shape(0), 4, 4},
              "(N, 4, 4) or (N, 3, 4) with N = " + std::to_string(intrinsics.shape(0)));
  const auto [height, width] = render_size(*engine, state, size);
  const std::vector<Camera> cameras = cameras_from(intrinsics, c2w, height, width);
  warn_principal_point_off_centre(cameras);
  std::vector<py::ssize_t> shape{intrinsics.shape(0), height, width, 3};
  if (single) shape.erase(shape.begin());
  FloatArray out = output_array(out_in, shape);
  float* pixels = out.mutable_data();
  try {
    py::gil_scoped_release released;
    render_cameras(*engine, state.state, cameras, pixels, check_signals);
  } catch (const Interrupted&) {
    throw py::error_already_set();  // the KeyboardInterrupt, raised between layers or batches
  }
  return std::move(out);
}

py::object config_dict(const Engine& engine) {
  return py::module_::import("json").attr("loads")(engine.model().config().source.dump());
}

py::object training_size(const Engine& engine) {
  const ModelWeights& w = engine.model().weights();
  if (w.trained_height <= 0) return py::none();
  return py::make_tuple(w.trained_height, w.trained_width);
}

std::shared_ptr<State> load_state(const py::object& path_in, const std::shared_ptr<Engine>& engine) {
  const std::string path = path_argument(path_in, "path");
  required(engine, "model", "the lact.Model the state was encoded with");
  auto state = std::make_shared<State>();
  state->engine = engine;
  py::gil_scoped_release released;
  const EngineCall call(*engine, true);
  state->state = load_scene_state(path, engine->model().weights(), engine->backend()).state;
  engine->run->output().inputs.add(path);  // State.save never writes over it
  return state;
}

// check_named_output's refusals name the CLI's flag (--force); State.save's keyword is force=True.
Error with_keyword(const Error& refusal) {
  std::string message = refusal.what();
  const size_t flag = message.find("--force");
  if (flag != std::string::npos) message.replace(flag, 7, "force=True");
  return Error(message);
}

void save_state(const State& state, const py::object& path_in, bool force) {
  const std::string path = path_argument(path_in, "path");
  py::gil_scoped_release released;
  const EngineCall call(*state.engine, true);
  // As the CLI's -o (system/output_files.h): never one of the files this model's calls read (the model, a loaded
  // state; through a link or another spelling either), never a folder or a name under /dev, /proc or /sys, and
  // an existing file only with force=True.
  try {
    state.engine->run->check_output(path, "path", force);
    if (force) allow_replacing(path);  // an earlier save without force made this path one never to replace
    // The model's path lets `lact render --state` find it, as for a state the CLI wrote.
    save_scene_state(path, state.state, state.engine->model().weights(), state.engine->backend(),
                     {{"model", state.engine->path}, {"written_by", "lact python module"}});
  } catch (const Error& refusal) {  // also "appeared while this run worked": a file written there meanwhile
    throw with_keyword(refusal);
  }
}

}  // namespace

void bind_model(py::module_& m) {
  warning_category = PyErr_NewException("lact.Warning", PyExc_UserWarning, nullptr);
  if (!warning_category) throw py::error_already_set();
  m.attr("Warning") = py::handle(warning_category);
  m.def("_input_pixel_bytes_copied", &input_pixel_bytes_copied,
        "Bytes of input pixels the engine has copied on the host so far (tests/python: the zero-copy test).");
  // Both classes first, so that each one's signatures name the other as lact.Model / lact.State.
  // Final: Model's __new__ makes the whole object, which a subclass's would not be.
  py::class_<Engine, std::shared_ptr<Engine>> model(m, "Model", docs::kModel, py::is_final());
  py::class_<State, std::shared_ptr<State>> state(m, "State", docs::kState, py::is_final());
  // The model is opened in __new__ (its __init__ does nothing), so that no lact.Model exists without one:
  // with pybind11's usual __init__, Model.__new__(Model) or unpickling left an object with no C++ value.
  model.attr("__new__") = py::staticmethod(py::cpp_function(
      [](const py::object&, const py::object& path, const std::string& device, const std::string& precision,
         const py::object& threads) {
        check_device_arguments(device, precision);
        // 0: every usable CPU; more than the usable CPUs is cut to them, with a note (as --threads, in Python's
        // words, on sys.stderr: a notebook shows it)
        return open_engine(path_argument(path, "path"), device, precision,
                           usable_threads(int_argument(threads, "threads", 0, INT_MAX)));
      },
      py::name("__new__"), py::arg("cls"), py::arg("path"), py::arg("device") = "cpu", py::arg("precision") = "fp32",
      py::arg("threads") = 0));
  model
      .def(
          "__init__",
          [](const py::object&, const py::object&, const std::string&, const std::string&, const py::object&) {},
          py::arg("path"), py::arg("device") = "cpu", py::arg("precision") = "fp32", py::arg("threads") = 0)
      .def_property_readonly("config", &config_dict, "The model's config (the JSON its file carries), a dict.")
      .def_property_readonly("training_size", &training_size,
                             "(H, W) the model was trained at (its file's metadata), or None when unknown.")
      .def_property_readonly("patch_size", [](const Engine& e) { return e.model().config().patch_size; })
      .def_readonly("path", &Engine::path)
      .def_readonly("device", &Engine::device)
      .def_readonly("precision", &Engine::precision)
      .def_readonly("threads", &Engine::threads, "CPU threads of each call (0: every usable CPU).")
      .def_property_readonly(
          "_last_engine_seconds", [](const Engine& e) { return e.last_engine_s.load(); },
          "Seconds the last encode or render spent inside the engine (python/bench_overhead.py).")
      .def_property_readonly(
          "_calls_inside", [](const Engine& e) { return e.calls_inside.load() & 0xffffffffu; },
          "The engine calls begun on this model and not ended (tests/python).")
      .def_property_readonly(
          "_render_layers_done", [](const Engine& e) { return e.render_layers_done.load(); },
          "The layers its batch had done when a render last checked for Ctrl-C, or all of them when a batch "
          "finished (tests/python).")
      .def_property_readonly(
          "_most_renders_at_once", [](const Engine& e) { return e.most_renders_running.load(); },
          "The most render calls that ran in the engine at the same time so far (tests/python).")
      .def("encode", &encode, py::arg("images"), py::arg("intrinsics"), py::arg("c2w"), docs::kEncode)
      .def("render", &render, py::arg("state"), py::arg("intrinsics"), py::arg("c2w"), py::arg("size") = py::none(),
           py::arg("out") = py::none(), docs::kRender)
      .def("__repr__", [](const Engine& e) {
        return "lact.Model('" + e.path + "', device='" + e.device + "', precision='" + e.precision +
               "', threads=" + std::to_string(e.threads) + ")";
      });
  refuse_pickle(model, "open it again in the other process (lact.Model(path, ...))");

  state
      .def("save", &save_state, py::arg("path"), py::kw_only(), py::arg("force") = false,
           "Write the state as safetensors (the format `lact encode -o` writes). As -o: an existing file is "
           "replaced only with force=True, and never one the model has read.")
      .def_static("load", &load_state, py::arg("path"), py::arg("model"),
                  "Read a state file (from State.save or `lact encode -o`) for `model`, the model it was encoded with.")
      .def_property_readonly(
          "nbytes", [](const State& s) { return s.state.floats() * int64_t{4}; },
          "Bytes of the state's tensors (float32).")
      .def_property_readonly(
          "size", [](const State& s) { return py::make_tuple(s.state.height, s.state.width); },
          "(H, W) of the views it was encoded from: render's default size.")
      .def_property_readonly("input_views", [](const State& s) { return s.state.input_views; })
      .def("__repr__", [](const State& s) {
        return "lact.State(" + std::to_string(s.state.input_views) + " views at " + std::to_string(s.state.height) +
               "x" + std::to_string(s.state.width) + ")";
      });
  refuse_new(state, "it comes from Model.encode or lact.State.load");
  refuse_pickle(state, "State.save(path) writes it, lact.State.load(path, model) reads it back");
}

}  // namespace lact::python
