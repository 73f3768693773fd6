"""The module as a notebook user meets it (issue 52, items 3 and 4): 8-bit images as PIL gives them, the guard
rails of `lact render` as Python warnings (lact.Warning), and the examples' usage without arguments."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import FIXTURE, ROOT, THREADS, encode_inputs

SHIPPED = os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors")
EXAMPLE = os.path.join(ROOT, "examples", "gso_toy_64")
INPUTS = "16,20,24,28,34,38,42,46"


def test_uint8_images_are_taken_over_255(lact, model, scene):
    i, t = scene.inputs, scene.targets
    eight_bit = np.round(scene.images[i] * 255).astype(np.uint8)
    from_uint8 = model.encode(eight_bit, scene.intrinsics[i], scene.c2w[i])
    from_float = model.encode(eight_bit.astype(np.float32) / 255, scene.intrinsics[i], scene.c2w[i])
    np.testing.assert_array_equal(model.render(from_uint8, scene.intrinsics[t], scene.c2w[t]),
                                  model.render(from_float, scene.intrinsics[t], scene.c2w[t]))


def test_float_images_out_of_range_stay_an_error(lact, model, scene):
    i = scene.inputs
    with pytest.raises(ValueError, match="divide 8-bit images by 255"):
        model.encode(scene.images[i] * 255, scene.intrinsics[i], scene.c2w[i])


def cli_warnings(*flags):
    """The warning lines `lact render` prints before its work, without the scene name it starts them with."""
    p = subprocess.run([os.environ.get("LACT_CLI", os.path.join(ROOT, "build", "app", "lact")), "render",
                        "--model", SHIPPED, "--data", EXAMPLE, "--inputs", INPUTS, "--targets", "2", "--quiet",
                        "--out", os.path.join(os.environ.get("TMPDIR", "/tmp"), "lact_notebook_%d" % os.getpid()),
                        "--threads", str(THREADS), *flags], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    prefix = "lact: warning: gso_toy_64: "
    return [l[len(prefix):] for l in p.stderr.splitlines() if l.startswith(prefix) and "nearest input" not in l]


def test_guard_rails_warn_as_render_does(lact):
    assert issubclass(lact.Warning, UserWarning)
    model = lact.Model(SHIPPED, threads=THREADS)
    scene = lact.read_scene(EXAMPLE, inputs=INPUTS)
    i = scene.inputs
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # in the model's regime: not a word
        model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
    # Twice the side (4x the pixels), and the cameras three times as far: render's two warnings, its words.
    big = np.repeat(np.repeat(scene.images[i], 2, axis=1), 2, axis=2)
    far = scene.c2w[i].copy()
    far[:, :3, 3] *= 3
    with pytest.warns(lact.Warning) as said:
        model.encode(big, scene.intrinsics[i] * 2, far)
    texts = [str(w.message) for w in said]
    expected = cli_warnings("--size", "128x128")
    assert expected and texts[0].split(": expect the patch grid")[0] == expected[0].split(": expect the patch grid")[0]
    assert "units from the origin" in texts[1] and "trained with cameras about 2.7" in texts[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", lact.Warning)  # as warnings.filterwarnings makes it: an exception
        with pytest.raises(lact.Warning):
            model.encode(big, scene.intrinsics[i] * 2, scene.c2w[i])


def test_opengl_poses_are_named_as_such(lact):
    """A notebook's poses in OpenGL / Blender axes (y up, z back) passed as lact's OpenCV ones: the warning says
    so (before: "do not look at a common centre ... use a scene model"); the same poses converted are silent."""
    model = lact.Model(SHIPPED, threads=THREADS)
    scene = lact.read_scene(EXAMPLE, inputs=INPUTS)
    i = scene.inputs
    opengl = scene.c2w[i] @ np.diag([1.0, -1.0, -1.0, 1.0])
    with pytest.warns(lact.Warning) as said:
        model.encode(scene.images[i], scene.intrinsics[i], opengl)
    assert len(said) == 1 and "OpenGL or Blender poses" in str(said[0].message), [str(w.message) for w in said]
    converted = opengl.copy()
    converted[:, :3, 1:3] *= -1  # what the warning tells the user to do
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.encode(scene.images[i], scene.intrinsics[i], converted)


@pytest.mark.parametrize("example", ["evaluate_index.py", "orbit_video.py"])
def test_examples_print_usage(example):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", example), "--help"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("usage:"), p.stdout + p.stderr
    if example == "evaluate_index.py":  # its arguments are required: without them, the usage and exit 2
        p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", example)], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 2 and "usage:" in p.stderr and "Traceback" not in p.stderr, p.stderr
