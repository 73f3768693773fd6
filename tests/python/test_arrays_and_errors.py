"""Argument conversion (no numpy copy of C-contiguous float32; other orders and float64 converted once, same result)
and the documented exception for each kind of bad input."""
import os
import re
import subprocess
import tracemalloc

import numpy as np
import pytest

from conftest import FIXTURE, encode_inputs


def render_targets(model, state, scene):
    t = scene.targets
    return model.render(state, scene.intrinsics[t], scene.c2w[t])


def numpy_bytes_allocated(call):
    """Bytes numpy allocated (and kept until the peak) during call(): tracemalloc sees numpy's array buffers."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_c_contiguous_float32_is_not_copied(model, scene):
    i = scene.inputs
    images = np.ascontiguousarray(np.repeat(np.repeat(scene.images[i], 8, axis=1), 8, axis=2))  # 256x384: 3.5 MB
    intrinsics = scene.intrinsics[i] * 8
    c2w = scene.c2w[i]
    direct = numpy_bytes_allocated(lambda: model.encode(images, intrinsics, c2w))
    fortran = np.asfortranarray(images)
    converted = numpy_bytes_allocated(lambda: model.encode(fortran, intrinsics, c2w))
    assert direct < images.nbytes / 10, direct
    assert converted >= images.nbytes, converted


def test_fortran_and_float64_give_the_same_result(model, scene):
    i = scene.inputs
    reference = render_targets(model, encode_inputs(model, scene), scene)
    for convert in (np.asfortranarray, lambda a: a.astype(np.float64), lambda a: a.tolist()):
        state = model.encode(convert(scene.images[i]), convert(scene.intrinsics[i]), convert(scene.c2w[i]))
        np.testing.assert_array_equal(render_targets(model, state, scene), reference)


def test_wrong_dtype_is_a_type_error(model, scene):
    i = scene.inputs
    # uint8 images are taken over 255 (test_notebook.py); other integer images are refused.
    with pytest.raises(TypeError, match="images: expected a float32 array.*int16"):
        model.encode((scene.images[i] * 255).astype(np.int16), scene.intrinsics[i], scene.c2w[i])
    with pytest.raises(TypeError, match=r"^intrinsics: expected a float32 array \(float64, float16 and integer arrays "
                       r"are converted once\), got dtype complex64"):
        model.encode(scene.images[i], scene.intrinsics[i].astype(np.complex64), scene.c2w[i])
    # Poses are used in float64: the message says so (before: "expected a float32 array").
    with pytest.raises(TypeError, match=r"^c2w: expected a float64 array \(float32, float16 and integer arrays are "
                       r"converted once\), got dtype bool"):
        model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i] != 0)


def test_integer_camera_arrays_are_converted(model, scene):
    # Before: TypeError "c2w: expected a float32 array ..., got dtype int64" for np.eye(4, dtype=int), and the same
    # for integer intrinsics. They are the cameras their float64 copies are.
    i, t = scene.inputs, scene.targets
    state = encode_inputs(model, scene)
    whole = np.round(scene.intrinsics[t]).astype(np.int64)
    expected = model.render(state, whole.astype(np.float64), np.eye(4)[None].repeat(len(t), 0))
    for k in (whole, whole.astype(np.int32), whole.astype(np.uint16)):
        np.testing.assert_array_equal(model.render(state, k, np.eye(4, dtype=int)[None].repeat(len(t), 0)), expected)
    np.testing.assert_array_equal(model.render(state, whole[0], np.eye(4, dtype=np.int8)), expected[0])
    reference = render_targets(model, model.encode(scene.images[i], np.round(scene.intrinsics[i]), scene.c2w[i]), scene)
    integer = model.encode(scene.images[i], np.round(scene.intrinsics[i]).astype(np.int32), scene.c2w[i])
    np.testing.assert_array_equal(render_targets(model, integer, scene), reference)


def test_wrong_shape_or_value_is_a_value_error(model, scene):
    i = scene.inputs
    with pytest.raises(ValueError, match=r"images: expected shape \(N, H, W, 3\), got \(3, 32, 48\)"):
        model.encode(scene.images[i][..., 0], scene.intrinsics[i], scene.c2w[i])
    with pytest.raises(ValueError, match="intrinsics: expected shape"):
        model.encode(scene.images[i], scene.intrinsics[:2], scene.c2w[i])
    with pytest.raises(ValueError, match=r"images: expected shape .* got \(0, 32, 48, 3\): an empty array"):
        model.encode(scene.images[i][:0], scene.intrinsics[i][:0], scene.c2w[i][:0])
    bad = scene.c2w[i].copy()
    bad[1, 0, 3] = np.nan
    with pytest.raises(ValueError, match="c2w: holds NaN"):
        model.encode(scene.images[i], scene.intrinsics[i], bad)
    sheared = scene.c2w[i].copy()
    sheared[0, 0, 1] += 0.5
    with pytest.raises(ValueError, match="camera 0"):
        model.encode(scene.images[i], scene.intrinsics[i], sheared)
    state = encode_inputs(model, scene)
    with pytest.raises(ValueError, match="size: expected"):
        model.render(state, scene.intrinsics[3], scene.c2w[3], size=(30, 48))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # numpy's, as it converts
def test_a_value_beyond_float32_is_named_not_called_infinity(model, scene):
    # Before: "intrinsics: holds NaN or infinity (at flat index 2)" for a finite float64 value the conversion to
    # float32 made infinite; the message now names the value the caller gave and the range.
    state = encode_inputs(model, scene)
    k = scene.intrinsics[3].astype(np.float64)
    k[2] = 1e300
    with pytest.raises(ValueError, match=r"^intrinsics: value 1e\+300 \(at flat index 2\) is beyond the "
                       r"\+-3.4e\+38 of float32, which it is converted to$"):
        model.render(state, k, scene.c2w[3])
    k[2] = np.inf  # a real infinity keeps its words
    with pytest.raises(ValueError, match=r"^intrinsics: holds NaN or infinity \(at flat index 2\)$"):
        model.render(state, k, scene.c2w[3])
    images = scene.images[scene.inputs].astype(np.float64)
    images[1, 2, 3, 0] = -1e39
    at = 32 * 48 * 3 + 2 * 48 * 3 + 3 * 3  # view 1, row 2, column 3, channel 0
    with pytest.raises(ValueError, match=r"^images: value -1e\+39 \(at flat index %d\) is beyond" % at):
        model.encode(images, scene.intrinsics[scene.inputs], scene.c2w[scene.inputs])


def test_engine_errors_are_lact_errors(lact, model, scene, tmp_path):
    assert issubclass(lact.Error, RuntimeError)
    missing = str(tmp_path / "no_model.safetensors")
    with pytest.raises(lact.Error, match="no_model.safetensors"):
        lact.Model(missing)
    with pytest.raises(lact.Error, match="nowhere.json"):
        lact.read_scene(str(tmp_path / "nowhere.json"))
    with pytest.raises(lact.Error, match="inputs"):
        lact.read_scene(os.path.join(FIXTURE, "index.json"), inputs="0,99")
    with pytest.raises(lact.Error, match="not divisible by the patch size"):
        i = scene.inputs
        model.encode(scene.images[i][:, :30], scene.intrinsics[i], scene.c2w[i])
    not_a_state = tmp_path / "state.safetensors"
    not_a_state.write_bytes(b"not a safetensors file")
    with pytest.raises(lact.Error, match="state.safetensors"):
        lact.State.load(str(not_a_state), model)


def test_torch_cpu_tensors_are_converted(model, scene):
    torch = pytest.importorskip("torch")
    i = scene.inputs
    reference = render_targets(model, encode_inputs(model, scene), scene)
    state = model.encode(torch.from_numpy(scene.images[i]), torch.from_numpy(scene.intrinsics[i]),
                         torch.from_numpy(scene.c2w[i]))
    np.testing.assert_array_equal(render_targets(model, state, scene), reference)


class RefusesArray:
    """An array-like whose conversion fails with `error` (as a tensor that requires grad does)."""

    def __init__(self, error):
        self.error = error

    def __array__(self, *args, **kwargs):
        raise self.error


def test_conversion_failures_name_the_argument(model, scene):
    # Before: numpy's or the object's exception with no argument named (a ragged list's ValueError "setting an
    # array element with a sequence", torch's RuntimeError "Can't call numpy() on Tensor that requires grad").
    i = scene.inputs
    images, k, pose = scene.images[i], scene.intrinsics[i], scene.c2w[i]
    with pytest.raises(ValueError, match=r"^images: cannot be read as a numpy array \(ValueError: setting an array"):
        model.encode([[0.5, 0.5], [0.5]], k, pose)
    with pytest.raises(TypeError, match=r"^intrinsics: cannot be read as a numpy array \(RuntimeError: no array here"):
        model.encode(images, RefusesArray(RuntimeError("no array here")), pose)
    state = encode_inputs(model, scene)
    with pytest.raises(TypeError, match=r"^c2w: cannot be read as a numpy array \(OSError: gone\)") as raised:
        model.render(state, k, RefusesArray(OSError("gone")))
    assert isinstance(raised.value.__cause__, OSError)  # the object's own exception, chained
    for passed_through in (MemoryError, KeyboardInterrupt):
        with pytest.raises(passed_through):
            model.encode(RefusesArray(passed_through()), k, pose)


def test_torch_tensors_that_numpy_cannot_take_name_the_argument_and_uint8_is_8_bit(model, scene):
    torch = pytest.importorskip("torch")
    i = scene.inputs
    images, k, pose = scene.images[i], scene.intrinsics[i], scene.c2w[i]
    with pytest.raises(TypeError, match=r"^images: cannot be read as a numpy array \(RuntimeError: .*requires grad"):
        model.encode(torch.from_numpy(images).requires_grad_(), k, pose)
    with pytest.raises(TypeError, match=r"^images: cannot be read as a numpy array \(TypeError: .*BFloat16"):
        model.encode(torch.from_numpy(images).bfloat16(), k, pose)
    # A uint8 tensor is an 8-bit image as a uint8 numpy array is (before: TypeError "expected a float32 array").
    eight_bit = np.round(images * 255).astype(np.uint8)
    expected = render_targets(model, model.encode(eight_bit.astype(np.float32) / 255, k, pose), scene)
    np.testing.assert_array_equal(render_targets(model, model.encode(torch.from_numpy(eight_bit), k, pose), scene),
                                  expected)


def k_matrices(rows):
    """OpenCV's 3x3 K of each row fx, fy, cx, cy, built by hand (independent of the module's reading)."""
    k = np.zeros((len(rows), 3, 3), np.float32)
    k[:, 0, 0], k[:, 1, 1], k[:, 0, 2], k[:, 1, 2], k[:, 2, 2] = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], 1
    return k


def test_k_matrices_give_what_their_rows_give(lact, model, scene):
    i, t = scene.inputs, scene.targets
    reference = render_targets(model, encode_inputs(model, scene), scene)
    state = model.encode(scene.images[i], k_matrices(scene.intrinsics[i]), scene.c2w[i])
    np.testing.assert_array_equal(model.render(state, k_matrices(scene.intrinsics[t]), scene.c2w[t]), reference)
    one = k_matrices(scene.intrinsics[t[:1]])[0]  # (3, 3): one camera, as (4,) is
    np.testing.assert_array_equal(model.render(state, one, scene.c2w[t[0]]), reference[0])
    size = (int(scene.images.shape[1]), int(scene.images.shape[2]))
    keys = scene.intrinsics[i], scene.c2w[i]
    for a, b in zip(lact.camera_path("orbit", 5, size, *keys),
                    lact.camera_path("orbit", 5, size, k_matrices(keys[0]), keys[1])):
        np.testing.assert_array_equal(a, b)


def test_3x4_poses_give_what_4x4_give(model, scene):
    i, t = scene.inputs, scene.targets
    reference = render_targets(model, encode_inputs(model, scene), scene)
    state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i][:, :3].copy())
    np.testing.assert_array_equal(model.render(state, scene.intrinsics[t], scene.c2w[t][:, :3]), reference)
    np.testing.assert_array_equal(model.render(state, scene.intrinsics[t[0]], scene.c2w[t[0]][:3]), reference[0])
    with pytest.raises(ValueError, match=r"c2w: expected shape \(N, 4, 4\) or \(N, 3, 4\) with N = 3, got \(3, 2, 4\)"):
        model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i][:, :2])


def test_a_k_matrix_lact_cannot_hold_is_refused(model, scene):
    i = scene.inputs
    for entry, value, named in (((0, 1), 0.5, r"\[0, 1\] \(skew\)"), ((2, 0), 1e-3, r"\[2, 0\]"),
                                ((2, 2), 2.0, r"\[2, 2\]")):
        k = k_matrices(scene.intrinsics[i])
        k[1][entry] = value
        with pytest.raises(ValueError, match=r"^intrinsics\[1\]: entry " + named + " of the 3x3 K matrix is"):
            model.encode(scene.images[i], k, scene.c2w[i])
    with pytest.raises(ValueError, match=r"intrinsics: expected shape \(N, 4\) with N = 3 .*\(N, 3, 3\)"):
        model.encode(scene.images[i], k_matrices(scene.intrinsics[i])[:2], scene.c2w[i])


def test_a_k_matrix_off_by_rounding_is_taken(model, scene):
    # Before: K[2, 2] = 1 - 1e-7 was refused as "entry [2, 2] of the 3x3 K matrix is 1, not 1"; a K through
    # np.linalg.inv twice (entries of 1e-17 where zeros were) too. Rounding within 1e-6 is no other camera.
    i, t = scene.inputs, scene.targets
    state = encode_inputs(model, scene)
    k = k_matrices(scene.intrinsics[t]).astype(np.float64)
    expected = model.render(state, k, scene.c2w[t])
    near = k.copy()
    near[:, 2, 2] = 1 - 1e-7
    np.testing.assert_array_equal(model.render(state, near, scene.c2w[t]), expected)
    rounded = np.linalg.inv(np.linalg.inv(k))
    rounded[:, 2, 0] += 1e-12  # what inv(inv(K)) may leave
    np.testing.assert_allclose(model.render(state, rounded, scene.c2w[t]), expected, atol=1e-5)
    # Beyond rounding it is refused, and the value is printed with the digits that tell it from 1.
    off = k[0].copy()
    off[2, 2] = 1 - 1e-5
    with pytest.raises(ValueError, match=r"^intrinsics: entry \[2, 2\] of the 3x3 K matrix is 0\.9999899\d+, not 1:"):
        model.render(state, off, scene.c2w[t[0]])


def test_device_and_precision_are_named_as_python_passed_them(lact):
    # Before: lact.Error "--device cpu: unknown precision 'fp16' ..." (the CLI's flag, and the wrong one).
    path = os.path.join(FIXTURE, "model.safetensors")
    with pytest.raises(ValueError, match=r"^device: 'gpu' is not a device of this build \('cpu'"):
        lact.Model(path, device="gpu")
    with pytest.raises(ValueError, match=r"^precision: 'fp16' is not 'fp32', 'tf32' or 'bf16'$"):
        lact.Model(path, precision="fp16")
    try:  # where no GPU is (CI), the backend's refusal names the argument as given
        lact.Model(path, device="cuda")
    except lact.Error as e:
        assert str(e).startswith("device='cuda': "), str(e)


def test_read_scene_takes_view_indices_as_a_sequence(lact):
    index = os.path.join(FIXTURE, "index.json")
    reference = lact.read_scene(index, inputs="0,1,2", targets="3,4")
    for inputs, targets in (([0, 1, 2], (3, 4)), (range(3), np.array([3, 4])), (np.arange(3, dtype=np.int16), [3, 4])):
        scene = lact.read_scene(index, inputs=inputs, targets=targets)
        assert list(scene.inputs) == list(reference.inputs) and list(scene.targets) == list(reference.targets)
        np.testing.assert_array_equal(scene.images, reference.images)
    with pytest.raises(TypeError, match=r"^inputs: expected a selection like .* sequence of view indices, got int"):
        lact.read_scene(index, inputs=8)
    with pytest.raises(ValueError, match=r"^targets\[1\]: expected an integer from 0 to \d+, got -1"):
        lact.read_scene(index, inputs=[0], targets=[3, -1])
    with pytest.raises(TypeError, match=r"^inputs\[0\]: expected an integer .*got float"):
        lact.read_scene(index, inputs=[0.5])
    with pytest.raises(lact.Error, match="out of range"):
        lact.read_scene(index, inputs=[0, 99])


def test_read_scene_takes_a_boolean_mask(lact):
    # Before: a numpy bool array was read as indices (False, True, ... as 0, 1: "gives view 0 twice").
    index = os.path.join(FIXTURE, "index.json")
    count = len(lact.read_scene(index).names)
    mask = np.arange(count) % 2 == 0
    picked = list(np.flatnonzero(mask))
    for inputs, targets in ((mask, ~mask), (list(mask), [bool(b) for b in ~mask])):
        scene = lact.read_scene(index, inputs=inputs, targets=targets)
        assert list(scene.inputs) == picked and list(scene.targets) == list(np.flatnonzero(~mask))
        np.testing.assert_array_equal(scene.images, lact.read_scene(index, inputs=picked).images)
    for wrong in (mask[:-1], np.concatenate([mask, [True]]), np.concatenate([mask, [False]])):
        with pytest.raises(ValueError, match=r"^inputs: a boolean mask of %d entries, but a mask takes one entry per "
                           r"view of the scene \(.*%d views\)" % (len(wrong), count)):
            lact.read_scene(index, inputs=wrong)
    with pytest.raises(ValueError, match=r"^targets: a boolean mask of %d entries" % (count + 1)):
        lact.read_scene(index, inputs="rest", targets=np.ones(count + 1, bool))
    with pytest.raises(ValueError, match=r"^inputs: a boolean mask is one entry per view of the scene \(1-D\)"):
        lact.read_scene(index, inputs=mask[None])


def test_read_scene_errors_name_the_arguments(lact, tmp_path):
    # Before: the CLI's flags ("view index 99 (--inputs) is out of range", "--inputs: '1,1' gives view 1 twice").
    index = os.path.join(FIXTURE, "index.json")
    with pytest.raises(lact.Error, match=r"view index 99 \(inputs\) is out of range") as raised:
        lact.read_scene(index, inputs=[0, 99])
    with pytest.raises(lact.Error, match=r"^inputs: '1,1' gives view 1 twice") as twice:
        lact.read_scene(index, inputs="1,1")
    with pytest.raises(lact.Error, match=r"^targets: '2,2' gives view 2 twice") as targets:
        lact.read_scene(index, inputs=[0], targets="2,2")
    with pytest.raises(lact.Error, match=r"^inputs: 'rest' is every view that is not a target: give targets too"):
        lact.read_scene(index, inputs="rest", targets="")
    for e in (raised, twice, targets):
        assert "--" not in str(e.value), str(e.value)
    cli = os.environ.get("LACT_CLI")
    if cli:  # the CLI keeps its flags' names
        p = subprocess.run([cli, "render", "--model", os.path.join(FIXTURE, "model.safetensors"), "--data", index,
                            "--inputs", "1,1", "--targets", "3", "--out", str(tmp_path / "out")],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and "--inputs: '1,1' gives view 1 twice" in p.stderr, p.stderr


def test_threads_beyond_the_cpus_name_threads(lact, capfd):
    # Before: "lact: note: --threads 100000 is more than ..." (the CLI's flag) on the C library's stderr, which a
    # notebook does not show.
    model = lact.Model(os.path.join(FIXTURE, "model.safetensors"), threads=100000)
    err = capfd.readouterr().err
    assert re.search(r"^lact: note: threads=100000 is more than the (\d+) CPUs this process may use: using \1$", err,
                     re.M), err
    assert "--threads" not in err, err
    assert 0 < model.threads < 100000 and "threads=%d)" % model.threads in repr(model)


def test_model_repr_shows_precision_and_threads(lact):
    model = lact.Model(os.path.join(FIXTURE, "model.safetensors"), precision="bf16", threads=1)
    assert repr(model) == "lact.Model('%s', device='cpu', precision='bf16', threads=1)" % model.path
    assert model.precision == "bf16" and model.threads == 1


def test_a_size_the_patch_does_not_divide_says_how_to_read_one(lact, model, scene):
    # Before: "input size 30x48 is not divisible by the patch size 8" and no more: read_scene reads any size.
    i = scene.inputs
    with pytest.raises(lact.Error, match=r"^input size 30x48 is not divisible by the patch size (\d+): read the "
                       r"views at a size it divides, lact.read_scene\(\.\.\., size=\(H, W\)\) \(24x48 or 32x56\)"):
        model.encode(scene.images[i][:, :30], scene.intrinsics[i], scene.c2w[i])
    resized = lact.read_scene(os.path.join(FIXTURE, "index.json"), inputs="0,1,2", size=(24, 48))
    assert model.encode(resized.images[i], resized.intrinsics[i], resized.c2w[i]).size == (24, 48)
