"""Misuse never crashes the interpreter: objects made without their constructor (__new__, unpickling), None where
a model or a state goes, paths with NUL, sizes of the wrong kind, numpy's own errors, images in [0, 255] and
State.save onto an input each give one clear Python exception; a fork()ed child renders. A call that crashed
the interpreter before runs in a subprocess, so a segfault fails the test instead of ending the run."""
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest

from conftest import FIXTURE, encode_inputs, run_in_fresh_python

MODEL = os.path.join(FIXTURE, "model.safetensors")
INDEX = os.path.join(FIXTURE, "index.json")
NAN, INF = math.nan, math.inf


def run_isolated(code, env=None):
    """conftest.run_in_fresh_python with this file's time limit."""
    return run_in_fresh_python(code, timeout=120, env=env)


# How each bound class's half-made object was made before, and what a user then does with it (before: garbage
# values, RuntimeError("Unable to cast ..."), std::bad_alloc, or a segfault).
HALF_MADE = {
    "State.__new__": ("lact.State.__new__(lact.State)", "print(obj.size); obj.save('/nonexistent/x')"),
    "State unpickled": ("pickle.loads(b'\\x80\\x02clact\\nState\\n)\\x81.')", "model.render(obj, scene.intrinsics[3], scene.c2w[3])"),
    "Model.__new__": ("lact.Model.__new__(lact.Model)", "print(obj.path); obj.render(state, scene.intrinsics[3], scene.c2w[3])"),
    "Model unpickled": ("pickle.loads(b'\\x80\\x02clact\\nModel\\n)\\x81.')", "print(repr(obj)); lact.State.load('x', obj)"),
    "Scene.__new__": ("lact.Scene.__new__(lact.Scene)", "print(obj.images.shape, obj.names)"),
}


@pytest.mark.parametrize("name", sorted(HALF_MADE))
def test_half_made_objects_are_refused(name):
    make, use = HALF_MADE[name]
    status, output = run_isolated("""
        try:
            obj = %s
        except TypeError as e:
            print("refused:", e)
            sys.exit(0)
        %s
        sys.exit(3)
        """ % (make, use))
    assert status == 0 and "refused:" in output, "%s: exit status %d\n%s" % (name, status, output)
    if "Model" not in name:  # Model's __new__ needs its path, as Model() does
        assert "cannot be made directly" in output, output


def test_pickling_says_how_to_keep_them(lact, model, scene):
    import pickle
    with pytest.raises(TypeError, match=r"State.save\(path\)"):
        pickle.dumps(encode_inputs(model, scene))
    with pytest.raises(TypeError, match=r"lact.Model\(path"):
        pickle.dumps(model)
    with pytest.raises(TypeError, match="read_scene"):
        pickle.dumps(scene)


def test_none_for_a_model_or_a_state_is_a_type_error():
    status, output = run_isolated("""
        for call in (lambda: lact.State.load("state.safetensors", None),
                     lambda: model.render(None, scene.intrinsics[3], scene.c2w[3])):
            try:
                call()
            except TypeError as e:
                print("refused:", e)
        """)
    assert status == 0, "exit status %d (-11: a segfault)\n%s" % (status, output)
    assert "refused: model: expected the lact.Model the state was encoded with, got None" in output, output
    assert "refused: state: expected a lact.State" in output, output


def test_paths_with_nul_are_refused(lact, model, scene, tmp_path):
    # Before, the name was cut at the NUL: "model.safetensors\0junk" opened model.safetensors.
    with pytest.raises(ValueError, match="path: the path holds a NUL character"):
        lact.Model(MODEL + "\0junk")
    with pytest.raises(ValueError, match="path: .*NUL"):
        lact.read_scene(INDEX + "\0junk")
    with pytest.raises(ValueError, match="path: .*NUL"):
        lact.scene_names(INDEX + "\0junk")
    state = encode_inputs(model, scene)
    with pytest.raises(ValueError, match="path: .*NUL"):
        state.save(str(tmp_path / "state.safetensors") + "\0junk")
    assert not os.path.exists(tmp_path / "state.safetensors")
    with pytest.raises(TypeError, match="path: expected a path"):
        lact.Model(3)
    # os.PathLike works wherever a path goes
    import pathlib
    state.save(tmp_path / "state.safetensors")
    assert lact.State.load(tmp_path / "state.safetensors", lact.Model(pathlib.Path(MODEL))).size == state.size
    np.testing.assert_array_equal(lact.read_scene(pathlib.Path(INDEX), inputs=[0]).images,
                                  lact.read_scene(INDEX, inputs=[0]).images)
    assert lact.scene_names(pathlib.Path(INDEX)) == lact.scene_names(INDEX)
    with pytest.raises(TypeError, match="^weights: expected a path"):  # not pybind11's dump of every argument
        lact.lpips(scene.images[0], scene.images[0], 3)


def test_state_save_never_overwrites_an_input(lact, scene, tmp_path):
    model_file = tmp_path / "model.safetensors"  # a copy: before the fix, save wrote over the model itself
    shutil.copyfile(MODEL, model_file)
    original = model_file.read_bytes()
    model = lact.Model(str(model_file), threads=1)
    state = encode_inputs(model, scene)
    link = tmp_path / "link.safetensors"
    link.symlink_to(model_file)
    for target in (model_file, link, str(tmp_path) + "/./model.safetensors"):
        with pytest.raises(lact.Error, match="is one of this run's inputs.*refusing to overwrite it"):
            state.save(str(target))
    assert model_file.read_bytes() == original
    saved = tmp_path / "state.safetensors"
    state.save(str(saved))
    loaded = lact.State.load(str(saved), model)
    with pytest.raises(lact.Error, match="one of this run's inputs"):
        loaded.save(str(saved))  # the state file it was read from
    other = tmp_path / "other.safetensors"
    other.write_bytes(b"old")
    state.save(str(other), force=True)  # any other file is replaced with force=True, as the CLI's -o with --force
    assert lact.State.load(str(other), model).size == state.size
    with pytest.raises(lact.Error, match="one of this run's inputs"):
        state.save(str(model_file), force=True)  # force never reaches an input
    assert model_file.read_bytes() == original


def test_state_save_refuses_what_the_cli_refuses(lact, model, scene, tmp_path):
    """State.save follows `lact encode -o` (check_named_output): before, an existing file was replaced without a
    word, and a folder, a missing folder or /dev/null gave whatever the write met."""
    state = encode_inputs(model, scene)
    existing = tmp_path / "existing.safetensors"
    existing.write_bytes(b"old")
    with pytest.raises(lact.Error, match=r"path: '.*existing.safetensors' exists \(pass force=True to replace it\)"):
        state.save(existing)
    assert existing.read_bytes() == b"old"
    refused = {str(tmp_path): "is a folder", str(tmp_path / "missing" / "s.safetensors"): "does not exist",
               "/dev/null": "under /dev, /proc or /sys", "/proc/self/environ": "under /dev, /proc or /sys"}
    for path, why in refused.items():
        for force in (False, True):
            with pytest.raises(lact.Error, match=why):
                state.save(path, force=force)
    assert not os.path.exists(tmp_path / "missing")
    state.save(existing, force=True)
    assert lact.State.load(existing, model).size == state.size
    fresh = tmp_path / "fresh.safetensors"
    state.save(fresh)  # a new name needs no force
    with pytest.raises(lact.Error, match="exists"):
        state.save(fresh)
    state.save(fresh, force=True)  # the same process replaces its own file when told to
    assert lact.State.load(fresh, model).size == state.size
    with pytest.raises(TypeError):
        state.save(tmp_path / "x.safetensors", True)  # force is a keyword: save(path, True) says nothing


def test_integers_out_of_range_name_the_argument_and_its_range(lact):
    """Before: frames=2**70 or threads=2**70 raised pybind11's TypeError 'incompatible function arguments' with the
    signatures listed, and threads=-1 a lact.Error naming the CLI's --threads."""
    expected = {"frames": "frames: expected an integer from 1 to 100000", "threads":
                "threads: expected an integer from 0 to 2147483647"}
    calls = {"frames": lambda v: lact.camera_path("turntable", frames=v, size=(8, 8)),
             "threads": lambda v: lact.Model(MODEL, threads=v)}
    for name, call in calls.items():
        for value in (2 ** 70, -2 ** 70, 2 ** 31, -1):
            with pytest.raises(ValueError, match="^%s, got %d$" % (expected[name], value)):
                call(value)
        for value in (1.5, "2", True, None, np.array([1, 2])):
            with pytest.raises(TypeError, match="^%s, got " % expected[name]):
                call(value)
    with pytest.raises(ValueError, match="^frames: expected an integer from 1 to 100000, got 0$"):
        lact.camera_path("turntable", frames=0)
    with pytest.raises(ValueError, match="^size: expected .* got 1180591620717411303424 \\(out of range\\)$"):
        lact.camera_path("turntable", frames=2, size=(2 ** 70, 8))
    intrinsics, c2w = lact.camera_path("turntable", frames=np.int64(3), size=(8, 8))  # numpy's integers are ints
    assert intrinsics.shape == (3, 4) and c2w.shape == (3, 4, 4)
    assert lact.Model(MODEL, threads=np.int32(1)).patch_size > 0


def lact_path_exit_status(kind, flag, value):
    """`lact path KIND FLAG VALUE`'s exit status (the keys, for orbit and interpolate, from the fixture)."""
    cli = os.environ.get("LACT_CLI")
    if not cli:
        pytest.skip("LACT_CLI (the lact executable) not set")
    keys = [] if kind == "turntable" else ["--data", INDEX]
    with tempfile.TemporaryDirectory(prefix="lact_py_numbers_") as tmp:
        return subprocess.run([cli, "path", kind, *keys, flag, value, "--frames", "2", "--size", "16x16", "-o",
                               os.path.join(tmp, "path.json")], capture_output=True, timeout=60).returncode


# camera_path's float arguments: (the path kind that takes it, the range its message states, values outside, values
# at the edges inside). `lact path`'s flag of the same name is the reference: it refuses and takes the same values.
PATH_NUMBERS = {
    "hfov": ("turntable", "(0, 180) degrees", [0, -1, 180, 1e300, NAN, INF, -INF], [0.5, 179.5]),
    "elevation": ("orbit", "(-90, 90) degrees", [90, -90, 1e300, NAN, INF], [-89.99, 89.99]),
    "min_radius": ("turntable", "(0, 1e6)", [0, -1e-9, -1, NAN, -INF], [1e-6, 3.0]),
    "max_radius": ("turntable", "[1.7, 1e6) (not below the min radius)", [1.69, -1, 1e6, NAN, INF], [1.7, 999999.0]),
    "radius": ("orbit", "[0, 1e6) (0: the cameras' distance)", [-1e-9, -1, 1e6, NAN, INF], [0, 999999.0]),
    "smoothness": ("interpolate", "[0, 1]", [-0.1, 1.1, NAN, INF, -INF], [0, 1]),
}


def test_path_numbers_out_of_range_name_the_argument_and_its_range(lact):
    """Before: each bad value gave a ValueError without the value (min_radius and max_radius shared one), hfov=True
    was taken as 1 degree, and 2**2000, a str or None raised pybind11's TypeError listing the signatures."""
    scene = lact.read_scene(INDEX)
    keys = {"intrinsics": scene.intrinsics, "c2w": scene.c2w}
    for name, (kind, stated, bad, good) in PATH_NUMBERS.items():
        call = lambda v: lact.camera_path(kind, frames=2, size=(16, 16), **{name: v}, **({} if kind == "turntable"
                                                                                        else keys))
        expected = "%s: expected a number in %s" % (name, stated)
        for value in bad:
            with pytest.raises(ValueError, match="^%s, got %s$" % (re.escape(expected), re.escape(str(value)))):
                call(value)
            assert lact_path_exit_status(kind, "--" + name.replace("_", "-"), repr(float(value))) != 0, value
        for value in good:
            intrinsics, c2w = call(value)
            assert intrinsics.shape == (2, 4) and np.isfinite(c2w).all(), (name, value)
            assert lact_path_exit_status(kind, "--" + name.replace("_", "-"), repr(float(value))) == 0, value
        for value in ("50", None, True, [50.0], np.array([50.0]), 1j):
            with pytest.raises(TypeError, match="^%s, got %s$" % (re.escape(expected), type(value).__name__)):
                call(value)
        with pytest.raises(ValueError, match="^%s, got %d$" % (re.escape(expected), 2 ** 2000)):
            call(2 ** 2000)
    # numpy's scalars are numbers; max_radius's range starts at the min_radius given.
    assert lact.camera_path("turntable", frames=2, size=(8, 8), hfov=np.float32(40), min_radius=np.int64(2),
                            max_radius=np.float64(2))[0].shape == (2, 4)
    with pytest.raises(ValueError, match=r"^max_radius: expected a number in \[2.5, 1e6\) "
                                         r"\(not below the min radius\), got 2.0$"):
        lact.camera_path("turntable", min_radius=2.5, max_radius=2.0)


def test_sizes_of_the_wrong_kind_name_size(lact, model, scene):
    state = encode_inputs(model, scene)
    k, pose = scene.intrinsics[3], scene.c2w[3]
    expected = r"size: expected \(H, W\), two integers, or \"HxW\", got "
    with pytest.raises(ValueError, match=expected + "3 values"):
        model.render(state, k, pose, size=(32, 48, 1))
    with pytest.raises(ValueError, match=expected + r"an entry 32.5 \(not a whole number\)"):
        model.render(state, k, pose, size=(32.5, 48))
    with pytest.raises(ValueError, match="size: .*out of range"):
        model.render(state, k, pose, size=(2 ** 40, 48))
    with pytest.raises(TypeError, match=expected + "an entry of type bool"):
        model.render(state, k, pose, size=(True, 48))
    with pytest.raises(TypeError, match=expected + "int"):
        model.render(state, k, pose, size=32)
    np.testing.assert_array_equal(model.render(state, k, pose, size=np.array([32, 48])), model.render(state, k, pose))
    with pytest.raises(ValueError, match=expected + "'256y'"):
        lact.camera_path("turntable", 3, size="256y")
    with pytest.raises(ValueError, match=expected + "1 values"):
        lact.read_scene(INDEX, size=[32])


def test_sizes_as_whole_floats_and_hxw_strings(lact, model, scene):
    """Before: size=np.array([64., 64.]) and size="64x64" were a TypeError in render and camera_path (read_scene took
    the string). Each function takes (H, W) of whole numbers (ints, or floats holding them) and "HxW" alike."""
    state = encode_inputs(model, scene)
    k, pose = scene.intrinsics[3], scene.c2w[3]
    height, width = state.size
    expected = model.render(state, k, pose, size=(height, width))
    for size in (np.array([height, width], np.float64), (float(height), np.float32(width)), "%dx%d" % (height, width)):
        np.testing.assert_array_equal(model.render(state, k, pose, size=size), expected)
        for a, b in zip(lact.camera_path("turntable", 2, size=size),
                        lact.camera_path("turntable", 2, size=(height, width))):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(lact.read_scene(INDEX, inputs=[0], size=size).images,
                                      lact.read_scene(INDEX, inputs=[0], size=(height, width)).images)
    np.testing.assert_array_equal(lact.camera_path("turntable", 2, size="16")[0],
                                  lact.camera_path("turntable", 2, size=(16, 16))[0])  # "N" is NxN, as --size reads it
    for call in (lambda size: model.render(state, k, pose, size=size),
                 lambda size: lact.camera_path("turntable", 2, size=size),
                 lambda size: lact.read_scene(INDEX, inputs=[0], size=size)):
        for bad, said in (("32by48", "'32by48'"), ("", "''"), (np.array([32.5, 48.0]), "an entry 32.5"),
                          ((NAN, 48), "an entry nan"), ((1e30, 48), "an entry 1e\\+30 \\(out of range\\)")):
            with pytest.raises(ValueError, match=r"^size: expected \(H, W\), two integers, or \"HxW\", got " + said):
                call(bad)
    with pytest.raises(TypeError, match="scene: expected a scene's name"):
        lact.read_scene(INDEX, scene=3)


def test_numpy_errors_come_out_as_themselves(model, scene):
    # Converting 3 EiB of float64 to float32: numpy's MemoryError (before: RuntimeError "error_already_set called
    # while Python error indicator not set", numpy's exception cleared).
    i = scene.inputs
    huge = np.broadcast_to(np.float64(0.5), (2 ** 20, 2 ** 20, 2 ** 18, 3))
    with pytest.raises(MemoryError):
        model.encode(huge, scene.intrinsics[i], scene.c2w[i])


def test_images_outside_0_1_are_refused(lact, model, scene):
    i = scene.inputs
    images, k, pose = scene.images[i], scene.intrinsics[i], scene.c2w[i]
    with pytest.raises(ValueError, match=r"images: values up to 255, .*\[0, 1\]: divide 8-bit images by 255"):
        model.encode(images * 255, k, pose)
    with pytest.raises(ValueError, match=r"images: values down to -.*\(x \+ 1\) / 2"):
        model.encode(images * 2 - 1, k, pose)
    with pytest.raises(ValueError, match="a: values up to 255"):
        lact.psnr(scene.images[0] * 255, scene.images[1])
    # A resampling filter's overshoot is no 8-bit image: kept.
    overshoot = images.copy()
    overshoot[0, 0, 0] = [1.05, -0.05, 0.5]
    model.encode(overshoot, k, pose)


def wait_or_kill(pid, seconds):
    """The child's exit status, or None after killing it when it has not exited within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def render_in_child(call, path):
    """Forks; the child saves call() to `path` (also from a thread it starts) and exits; its status or None."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            np.save(path, call())
            result = []
            thread = threading.Thread(target=lambda: result.append(call()))
            thread.start()
            thread.join()
            status = 0 if np.allclose(result[0], np.load(path), rtol=0, atol=1e-5) else 2
        finally:
            os._exit(status)
    return wait_or_kill(pid, 60)


def test_a_forked_child_renders(model, scene, tmp_path):
    # The parent's 2-thread render leaves OpenMP's pool on this thread; before, the child's render waited forever
    # for pool threads that fork() did not copy.
    state = encode_inputs(model, scene)
    t = scene.targets
    expected = model.render(state, scene.intrinsics[t], scene.c2w[t])
    out = str(tmp_path / "child.npy")
    status = render_in_child(lambda: model.render(state, scene.intrinsics[t], scene.c2w[t]), out)
    assert status is not None, "the forked child's render did not return within 60 s"
    assert status == 0, "the child exited with status %d" % status
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-5)


def encode_with_handler(model, scene, handler):
    """Encodes a 6-view 256x384 scene in this (the main) thread with `handler` on SIGUSR1, which another thread
    sends once the encode is inside the engine: Python runs the handler between encode's layers, inside the call."""
    i = scene.inputs
    images = np.ascontiguousarray(np.tile(scene.images[i], (2, 8, 8, 1)))
    intrinsics, c2w = np.tile(scene.intrinsics[i] * 8, (2, 1)), np.tile(scene.c2w[i], (2, 1, 1))
    main = threading.get_ident()

    def signal_once_inside():
        while model._calls_inside == 0:
            time.sleep(0.001)
        signal.pthread_kill(main, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        sender = threading.Thread(target=signal_once_inside)
        sender.start()
        model.encode(images, intrinsics, c2w)
        sender.join()
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_child_forked_while_a_thread_is_inside_the_model_is_refused(lact, scene, tmp_path):
    # Before, the child's copy of the model's lock stayed held by the encoding thread, which the child does not
    # have: the child's render waited forever.
    model = lact.Model(MODEL, threads=2)
    state = encode_inputs(model, scene)
    k, pose = scene.intrinsics[3], scene.c2w[3]
    statuses = []

    def fork_and_render():
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                model.render(state, k, pose)
            except lact.Error as e:
                status = 0 if "another thread was inside this model when the process forked" in str(e) else 2
            finally:
                os._exit(status)
        statuses.append(wait_or_kill(pid, 60))

    def handler(signum, frame):
        if model._calls_inside == 1:  # the encode has not returned: another thread forks meanwhile
            forker = threading.Thread(target=fork_and_render)
            forker.start()
            forker.join()

    for attempt in range(5):  # the signal may land after encode's last layer: then it tells nothing; again
        encode_with_handler(model, scene, handler)
        if statuses:
            break
    assert statuses, "the signal never landed inside the encode"
    assert statuses[0] is not None, "the child's render did not return within 60 s"
    assert statuses[0] == 0, "the child exited with status %d (1: its render ran, 2: another error)" % statuses[0]
    # a child forked while no thread is inside renders as usual, and so does the parent
    out = str(tmp_path / "child.npy")
    assert render_in_child(lambda: model.render(state, k, pose), out) == 0
    np.testing.assert_allclose(np.load(out), model.render(state, k, pose), rtol=0, atol=1e-5)


def test_a_call_from_inside_a_call_of_the_same_model_is_refused(lact, scene):
    # A signal handler that renders while encode runs: this thread already holds the model's lock (before: a
    # RuntimeError "Resource deadlock avoided" from the lock, or a wait that never ends).
    model = lact.Model(MODEL, threads=1)
    state = encode_inputs(model, scene)
    errors = []

    def handler(signum, frame):
        if model._calls_inside == 1:
            try:
                model.render(state, scene.intrinsics[3], scene.c2w[3])
            except lact.Error as e:
                errors.append(str(e))

    for attempt in range(5):
        encode_with_handler(model, scene, handler)
        if errors:
            break
    assert errors and "called from inside another call of the same model on this thread" in errors[0], errors
    model.render(state, scene.intrinsics[3], scene.c2w[3])  # the model is whole afterwards


def test_a_state_of_the_model_opened_again_says_how_to_keep_it(lact, model, scene, tmp_path):
    # Before: "state: encoded by another lact.Model" and no more, after a notebook's model cell ran again.
    state = encode_inputs(model, scene)
    again = lact.Model(MODEL, threads=1)
    t = scene.targets
    with pytest.raises(ValueError, match=r"^state: encoded by another lact.Model .*: encode again with this model, or "
                       r"save the state \(state.save\(path\)\) and read it for this model \(lact.State.load\(path, "
                       r"model\)\)$"):
        again.render(state, scene.intrinsics[t], scene.c2w[t])
    state.save(tmp_path / "state.safetensors")  # the cure it names works
    np.testing.assert_array_equal(
        again.render(lact.State.load(tmp_path / "state.safetensors", again), scene.intrinsics[t], scene.c2w[t]),
        model.render(state, scene.intrinsics[t], scene.c2w[t]))


def test_a_render_size_beyond_memory_says_the_size_is_too_large(lact, model, scene, tmp_path):
    # Before: "encoding 67108864 tokens needs ...: use fewer or smaller input views", encode's advice for a render;
    # the CLI's render check says "rendering ... use a smaller size", which here is size=(H, W).
    # 65536x65536 needs hundreds of GiB for the fixture's model; `out` is a sparse file the refusal never writes.
    if os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") > 256 << 30:
        pytest.skip("a machine this large may have the memory for the render")
    state = encode_inputs(model, scene)
    side = 65536
    out = np.memmap(tmp_path / "out", np.float32, "w+", shape=(side, side, 3))
    k = scene.intrinsics[3] * side / scene.images.shape[2]
    with pytest.raises(lact.RenderMemoryError, match=r"^size 65536x65536: rendering one view of 67108864 tokens needs "
                       r"about .*: the render size is too large for this memory: render at a smaller size=\(H, W\)") \
            as raised:
        model.render(state, k, scene.c2w[3], size=(side, side), out=out)
    assert "input views" not in str(raised.value)
    assert "fewer cameras" not in str(raised.value)  # one camera: a smaller size is the only cure
    # The check's facts come as attributes, not only as words: a lact.Error, one view of 65536^2 / 8^2 tokens.
    error = raised.value
    assert isinstance(error, lact.Error)
    assert error.size == (side, side) and error.tokens == side * side // 64
    assert error.bytes_needed > error.bytes_available > 0
    if error.suggested_size is not None:
        h, w = error.suggested_size
        assert h == w and h % 8 == 0 and 8 <= h < side
        assert "size=(%d, %d) fits" % (h, w) in str(error)
    del out


def test_a_refused_render_size_suggests_one_that_renders():
    # Under ulimit -d (RLIMIT_DATA, which the memory check reads) 100 MiB above what the process holds, a 2048x2048
    # view does not fit; the refusal's suggested size renders (that it is the largest: test_memory_estimate).
    status, output = run_isolated("""
        import resource
        data = int(next(l for l in open("/proc/self/status") if l.startswith("VmData")).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (data + (100 << 20), resource.RLIM_INFINITY))
        k = scene.intrinsics[3] * 2048 / scene.images.shape[2]
        try:
            model.render(state, k, scene.c2w[3], size=(2048, 2048))
            raise SystemExit("no refusal")
        except lact.RenderMemoryError as e:
            h, w = e.suggested_size
            assert h == w and h % 8 == 0 and h < 2048, e.suggested_size
            assert e.bytes_needed > e.bytes_available, (e.bytes_needed, e.bytes_available)
            print("suggested", h, w)
        image = model.render(state, scene.intrinsics[3] * h / scene.images.shape[2], scene.c2w[3], size=(h, w))
        assert image.shape == (h, w, 3)
        """)
    assert status == 0, output
    assert "suggested" in output, output


def test_star_import_leaves_the_builtin_warning(lact):
    # Before: no __all__, so `from lact import *` bound Warning to lact.Warning, hiding the builtin.
    names = {}
    exec("from lact import *", names)
    assert "Warning" not in names and "_input_pixel_bytes_copied" not in names
    assert {"Model", "State", "Scene", "Error", "read_scene", "camera_path", "lpips"} <= set(names)
    assert set(lact.__all__) <= set(dir(lact)) and issubclass(lact.Warning, UserWarning)
