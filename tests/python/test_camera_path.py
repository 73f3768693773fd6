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
    expected = (r"^intrinsics\[0\]: principal point \(cx, cy\) = \(128, 128\) lies 350% of a side from the centre "
                r"of the 32x48 image render makes \(a camera's is near \(24, 16\)\): intrinsics are in pixels at the "
                r"rendered size \(pass size=")
    with pytest.warns(lact.Warning, match=expected):
        model.render(state, intrinsics, c2w)
    with warnings.catch_warnings():  # at the size they were made for, or made for the state's size: no warning
        warnings.simplefilter("error")
        model.render(state, intrinsics[0], c2w[0], size=(256, 256))
        model.render(state, *lact.camera_path("turntable", frames=2, size=state.size))
        i = scene.inputs
        model.render(state, scene.intrinsics[i], scene.c2w[i])


def test_cameras_made_for_twice_the_size_warn(lact, model, scene):
    # Before: intrinsics made for twice the rendered size put the principal point exactly on the image's edge
    # (cx = width), which the check (cx <= width) let through: the top-left quarter of the view, no warning. The
    # rule is the guard rail's (pipeline/guard_rails.h, kPrincipalMiddle): more than 0.375 of a side off centre.
    state = encode_inputs(model, scene)
    height, width = state.size
    t = scene.targets[0]
    # A centred camera made for (2H, 2W): cx = width, cy = height, on the edge of the (H, W) image.
    doubled = np.array([2 * scene.intrinsics[t][0], 2 * scene.intrinsics[t][1], width, height], np.float32)
    with pytest.warns(lact.Warning, match=r"^intrinsics\[0\]: principal point \(cx, cy\) = \(%d, %d\) lies 50%% of a "
                      r"side from the centre of the %dx%d image" % (width, height, height, width)):
        corner = model.render(state, doubled, scene.c2w[t])
    # What it renders is another view than the one at the size they were made for (a quarter of it).
    whole = model.render(state, doubled, scene.c2w[t], size=(2 * height, 2 * width))
    assert np.abs(corner - whole[::2, ::2]).max() > 0.05
    # A path made for (H, 2W) rendered at (H, W): cx on the edge, cy at the centre.
    intrinsics, c2w = lact.camera_path("turntable", frames=2, size=(height, 2 * width))
    with pytest.warns(lact.Warning, match=r"principal point .* lies 50% of a side"):
        model.render(state, intrinsics, c2w)
    with warnings.catch_warnings():  # within the guard rail's middle: no warning
        warnings.simplefilter("error")
        shifted = scene.intrinsics[t].copy()
        shifted[2] += 0.3 * width  # cx at 0.8 of the width: 30% off centre
        model.render(state, shifted, scene.c2w[t])
        model.render(state, intrinsics, c2w, size=(height, 2 * width))


def test_an_orbit_around_one_camera_says_what_it_needs(lact, scene):
    # Before: lact.Error "camera path: degenerate direction".
    with pytest.raises(ValueError, match=r"^intrinsics, c2w: an orbit circles the point its key cameras look at, which "
                       r"takes at least two cameras whose optical axes meet .*; got 1 camera"):
        lact.camera_path("orbit", 10, size=(32, 48), intrinsics=scene.intrinsics[:1], c2w=scene.c2w[:1])
    with pytest.raises(ValueError, match=r"^intrinsics, c2w: an orbit circles .*; these give none"):
        lact.camera_path("orbit", 10, size=(32, 48), intrinsics=scene.intrinsics[[0, 0]], c2w=scene.c2w[[0, 0]])
    two = lact.camera_path("orbit", 10, size=(32, 48), intrinsics=scene.intrinsics[:2], c2w=scene.c2w[:2])
    assert two[0].shape == (10, 4)
