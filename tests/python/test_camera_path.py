"""lact.camera_path against `lact path` (the same cameras) and against its geometry."""
import json
import os
import subprocess
import tempfile
import warnings

import numpy as np
import pytest

from conftest import FIXTURE, encode_inputs


def cli_path(*args):
    cli = os.environ.get("LACT_CLI")
    if not cli:
        pytest.skip("LACT_CLI (the lact executable) not set")
    with tempfile.TemporaryDirectory(prefix="lact_py_path_") as tmp:
        out = os.path.join(tmp, "path.json")
        p = subprocess.run([cli, "path", *args, "-o", out], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        frames = json.load(open(out))["frames"]
    intrinsics = np.array([[f["fx"], f["fy"], f["cx"], f["cy"]] for f in frames])
    return intrinsics, np.array([f["c2w"] for f in frames])


def test_turntable_is_the_cli_turntable(lact):
    intrinsics, c2w = lact.camera_path("turntable", frames=12, size=(64, 96))
    assert intrinsics.shape == (12, 4) and c2w.shape == (12, 4, 4)
    cli_intrinsics, cli_c2w = cli_path("turntable", "--frames", "12", "--size", "64x96")
    np.testing.assert_allclose(intrinsics, cli_intrinsics, rtol=1e-6)
    np.testing.assert_allclose(c2w, cli_c2w, atol=1e-9)
    radii = np.linalg.norm(c2w[:, :3, 3], axis=1)
    assert radii.min() >= 1.7 - 1e-9 and radii.max() <= 3.0 + 1e-9


@pytest.mark.parametrize("kind", ["orbit", "interpolate"])
def test_scene_paths_are_the_cli_paths(lact, kind):
    scene = lact.read_scene(os.path.join(FIXTURE, "index.json"))
    intrinsics, c2w = lact.camera_path(kind, frames=9, size=(32, 48), intrinsics=scene.intrinsics, c2w=scene.c2w)
    cli_intrinsics, cli_c2w = cli_path(kind, "--frames", "9", "--size", "32x48", "--data",
                                       os.path.join(FIXTURE, "index.json"))
    np.testing.assert_allclose(intrinsics, cli_intrinsics, rtol=1e-6)
    np.testing.assert_allclose(c2w, cli_c2w, atol=1e-6)
    if kind == "interpolate":  # the path starts at the first key and ends at the last
        np.testing.assert_allclose(c2w[0], scene.c2w[0], atol=1e-6)
        np.testing.assert_allclose(c2w[-1], scene.c2w[-1], atol=1e-6)


def test_smoothed_interpolation_is_the_cli_path(lact):
    # smoothness bends the path towards a spline through the keys: the CLI's cameras at 0.5, and not the linear ones.
    scene = lact.read_scene(os.path.join(FIXTURE, "index.json"))
    _, linear = lact.camera_path("interpolate", frames=9, size=(32, 48), intrinsics=scene.intrinsics, c2w=scene.c2w)
    intrinsics, c2w = lact.camera_path("interpolate", frames=9, size=(32, 48), intrinsics=scene.intrinsics,
                                       c2w=scene.c2w, smoothness=0.5)
    cli_intrinsics, cli_c2w = cli_path("interpolate", "--frames", "9", "--size", "32x48", "--smoothness", "0.5",
                                       "--data", os.path.join(FIXTURE, "index.json"))
    np.testing.assert_allclose(intrinsics, cli_intrinsics, rtol=1e-6)
    np.testing.assert_allclose(c2w, cli_c2w, atol=1e-6)
    assert np.abs(c2w[:, :3, 3] - linear[:, :3, 3]).max() > 1e-4
    with pytest.raises(ValueError, match="smoothness"):
        lact.camera_path("interpolate", intrinsics=scene.intrinsics, c2w=scene.c2w, smoothness=1.5)
    with pytest.raises(ValueError, match="smoothness"):
        lact.camera_path("turntable", smoothness=0.5)


def test_bad_path_arguments(lact):
    with pytest.raises(ValueError, match="kind"):
        lact.camera_path("spiral")
    with pytest.raises(ValueError, match="intrinsics, c2w"):
        lact.camera_path("orbit")
    with pytest.raises(ValueError, match="hfov"):
        lact.camera_path("turntable", hfov=200)


def test_a_camera_lact_path_refuses_is_refused_here(lact):
    # hfov 179.999 at 16 pixels: fx 7e-5 pixels, which `lact path` refuses to write and render refuses to use;
    # camera_path returned it and Model.render raised later, far from the argument that caused it.
    cli = os.environ.get("LACT_CLI")
    if cli:
        with tempfile.TemporaryDirectory(prefix="lact_py_path_") as tmp:
            p = subprocess.run([cli, "path", "turntable", "--hfov", "179.999", "--size", "16x16", "--frames", "2",
                                "-o", os.path.join(tmp, "path.json")], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "frame 0: focal length fx" in p.stderr, p.stderr
    with pytest.raises(ValueError, match=r"camera_path frame 0: focal length fx .* is outside"):
        lact.camera_path("turntable", frames=2, size=(16, 16), hfov=179.999)
    intrinsics, _ = lact.camera_path("turntable", frames=2, size=(16, 16), hfov=179.5)  # the edge that is kept
    assert intrinsics[0, 0] > 1e-3


def test_cameras_made_for_another_size_warn(lact, model, scene):
    # camera_path's default size (256x256: cx = cy = 128) rendered at the state's 32x48 rendered a corner of the
    # view without a word (max difference 0.17 from the cameras scaled to 32x48), even with warnings as errors.
    state = encode_inputs(model, scene)
    intrinsics, c2w = lact.camera_path("turntable", frames=2)
    expected = (r"^intrinsics\[0\]: principal point \(cx, cy\) = \(128, 128\) lies outside the 32x48 image render "
                r"makes: intrinsics are in pixels at the rendered size")
    with pytest.warns(lact.Warning, match=expected):
        model.render(state, intrinsics, c2w)
    with warnings.catch_warnings():  # at the size they were made for, or made for the state's size: no warning
        warnings.simplefilter("error")
        model.render(state, intrinsics[0], c2w[0], size=(256, 256))
        model.render(state, *lact.camera_path("turntable", frames=2, size=state.size))
        i = scene.inputs
        model.render(state, scene.intrinsics[i], scene.c2w[i])
