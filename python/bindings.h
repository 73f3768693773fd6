// The parts of the `lact` Python module (each file binds one group) and the docstrings help() shows.
#pragma once

#include <pybind11/pybind11.h>

namespace lact::python {

namespace py = pybind11;

void bind_model(py::module_& m);    // Model, State (bind_model.cpp)
void bind_scene(py::module_& m);    // read_scene, Scene (bind_scene.cpp)
void bind_metrics(py::module_& m);  // psnr, ssim, camera_path (bind_metrics.cpp)

namespace docs {

inline constexpr const char* kModule = R"(lact: the LaCT novel-view-synthesis engine from Python.

Arrays are numpy float32: images (N, H, W, 3) in [0, 1]; intrinsics (N, 4) = fx, fy, cx, cy in pixels at the
image's size, or OpenCV's matrices K (N, 3, 3) wherever intrinsics are taken; c2w (N, 4, 4) camera-to-world, or
(N, 3, 4) [R | t], OpenCV axes (x right, y down, z forward). Poses are kept in float64 (the engine's precision);
float32 poses are used exactly.

    model = lact.Model("models/lact_tiny_obj64.safetensors")
    scene = lact.read_scene("examples/gso_toy_64", inputs="16,20,24,28", targets="rest")
    state = model.encode(scene.images[scene.inputs], scene.intrinsics[scene.inputs], scene.c2w[scene.inputs])
    images = model.render(state, scene.intrinsics[scene.targets], scene.c2w[scene.targets])

Errors the engine reports raise lact.Error (a RuntimeError) with lact's one-line text; a wrong dtype raises
TypeError and a wrong shape, a non-finite value or images outside [0, 1] (beyond [-0.1, 1.1]: divide 8-bit images
by 255) ValueError, naming the argument. Paths are str, bytes or os.PathLike (a NUL in one is a ValueError).
Model, State and Scene cannot be pickled; a process forked after renders renders in the child on one CPU thread.)";

inline constexpr const char* kModel = R"(Model(path, device="cpu", precision="fp32", threads=0)

A LaCT model read from a .safetensors file (`lact` reads the same files). device: "cpu" or "cuda";
precision: "fp32", or "tf32" / "bf16" for matrix products; threads: CPU threads (0: every usable CPU).
Python threads may call render on one model at once: the GIL is released while the engine runs, and on the CPU their
renders run together (each with its own scratch memory; the model and the state are only read), giving the images one
thread gives. encode, State.save and State.load take turns with every other call; on CUDA renders take turns too.)";

inline constexpr const char* kEncode = R"(encode(images, intrinsics, c2w) -> State

Encodes input views into a scene state. images (N, H, W, 3) floats in [0, 1], H and W multiples of the patch size;
intrinsics (N, 4) pixels or K matrices (N, 3, 3); c2w (N, 4, 4). A C-contiguous float32 images array is read in
place, never copied on the CPU (copied once to the GPU with device="cuda"); it must not change while encode runs.
Other orders, float64, lists and torch CPU tensors are converted once to C-contiguous float32 first.
The GIL is released while encoding; Ctrl-C stops it between layers (KeyboardInterrupt).)";

inline constexpr const char* kRender = R"(render(state, intrinsics, c2w, size=None, out=None) -> images

Renders cameras from a state: intrinsics (N, 4) and c2w (N, 4, 4) give (N, H, W, 3); one camera as (4,) and
(4, 4) gives (H, W, 3); K matrices (N, 3, 3) or (3, 3) may stand for the intrinsics. size (H, W) or "HxW": the
state's size by default (the intrinsics are pixels at that size: a principal point far from the image's centre,
cameras made for another size, is a lact.Warning). All cameras are rendered in one engine call (the CLI's
batching: the same numbers), written straight into one new float32 array, or into `out` (a C-contiguous writeable
float32 array of that shape), which is returned. A call whose cameras do not fit in memory together is a
lact.RenderMemoryError before any work. The GIL is released while rendering; several threads may render from one
model at once. Ctrl-C stops it between layers and batches (KeyboardInterrupt): the images of the batches done are
written, the rest of `out` untouched.)";

inline constexpr const char* kState =
    R"(A scene state: what encode leaves (each layer's fast weights, attention caches).

save(path, force=False) writes it (safetensors, the format of `lact encode -o`): over an existing file only with
force=True, never over a file the model has read (its model file, a state it loaded); State.load(path, model)
reads one; nbytes its size in bytes; size the (H, W) it was encoded at. States come only from encode and load: State() and pickling are a TypeError.)";

inline constexpr const char* kReadScene =
    R"(read_scene(path, inputs="", targets="rest", size=None, normalize_poses="none", scene=None) -> Scene

Reads a scene the way `lact render --data` does (every layout lact reads: LaCT / LVSM indexes and camera files,
nerfstudio, NeRF-synthetic, COLMAP). inputs / targets: the CLI's view selection ("0,1,2", "uniform:8", "fold8",
"rest", ...), a sequence of view indices ([0, 1, 2], range(8), a numpy array of ints) or a boolean mask of one
entry per view (np.arange(N) % 8 == 0: the views where it is True); size "HxW" or (H, W):
the working size (default: the images' size); normalize_poses as --normalize-poses; scene: the scene's name in an
index of several.
Returns a Scene with images (N, H, W, 3), intrinsics (N, 4), c2w (N, 4, 4) float64, names (N) for all N views,
and inputs, targets: row indices into them.)";

inline constexpr const char* kPsnr = R"(psnr(a, b) -> float

PSNR in dB of two (H, W, 3) images, values clamped to [0, 1] (the report's definition: -10 log10 MSE, 100 for a
perfect match). Float images in [0, 1], or uint8 ones (over 255, as encode takes them), for each metric.)";

inline constexpr const char* kSsim = R"(ssim(a, b) -> float

SSIM of two (H, W, 3) images as the report computes it (scikit-image's structural_similarity with a Gaussian
window, sigma 1.5, data range 1, per channel, averaged).)";

inline constexpr const char* kLpips = R"(lpips(a, b, weights=None, net=None) -> float

LPIPS (v0.1; lower is closer) of two (H, W, 3) images as `lact render --lpips` computes it, values clamped to
[0, 1], with the backbone the weights file names: AlexNet (each side at least 31 pixels) or VGG16 (16 pixels; what
LVSM and LaCT's papers report). weights: a path (str, bytes, os.PathLike) to the file
`lact model convert --lpips BACKBONE.pth LINEAR.pth -o FILE` makes from the two published files; None: those
`lact model fetch lpips` (AlexNet) or `lact model fetch lpips-vgg` (net='vgg') caches under ~/.cache/lact
(lact.Error when there are none). net: 'alex', 'vgg' or None (the file's own); with weights, checks the file holds
that backbone. docs/guide/evaluation.md. Runs on the CPU.)";

inline constexpr const char* kCameraPath =
    R"(camera_path(kind, frames=120, size=(256, 256), intrinsics=None, c2w=None, **options) -> (intrinsics, c2w)

Cameras along a path, as `lact path` writes them: (frames, 4) intrinsics at `size` and (frames, 4, 4) c2w.
  "turntable": the official demo's (hfov=50, min_radius=1.7, max_radius=3.0, elevation=30; z up, at the origin);
  "orbit": a circle around the point the given cameras look at (radius=0: their mean distance, elevation=30),
           with the first camera's intrinsics: at least two cameras whose optical axes meet;
  "interpolate": through the given cameras in order (positions and intrinsics linear, rotations slerp; smoothness
                 in [0, 1] bends positions and rotations towards a Catmull-Rom spline through them, as
                 `lact path interpolate --smoothness` does).
orbit and interpolate need intrinsics (K, 4) and c2w (K, 4, 4) of key cameras at `size`; size (H, W) or "HxW".)";

}  // namespace docs

}  // namespace lact::python
