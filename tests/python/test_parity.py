"""The module computes what the engine computes: the official fixtures' expected renders, and the CLI's output."""
import os
import subprocess
import tempfile

import numpy as np
import pytest

from conftest import FIXTURE, FIXTURE_V2, THREADS, encode_inputs, read_safetensors


def expected_render(fixture):
    """The fixture's target renders [2, 3, H, W] as (2, H, W, 3)."""
    return read_safetensors(os.path.join(fixture, "expected.safetensors"))["target_render_rendering"].transpose(0, 2, 3, 1)


def cli_render(fixture):
    """`lact render --save-npy` of targets 3,4 from inputs 0,1,2 at THREADS threads."""
    cli = os.environ.get("LACT_CLI")
    if not cli:
        pytest.skip("LACT_CLI (the lact executable) not set")
    with tempfile.TemporaryDirectory(prefix="lact_py_") as out:
        p = subprocess.run([cli, "render", "--model", os.path.join(fixture, "model.safetensors"), "--data",
                            os.path.join(fixture, "index.json"), "--inputs", "0,1,2", "--targets", "3,4", "--out", out,
                            "--save-npy", "--threads", str(THREADS), "--quiet"], capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        return np.stack([np.load(os.path.join(out, "scene", "%d.npy" % v)) for v in (3, 4)])


@pytest.mark.parametrize("fixture", [FIXTURE, FIXTURE_V2], ids=["official", "v2"])
def test_fixture_and_cli(lact, fixture):
    model = lact.Model(os.path.join(fixture, "model.safetensors"), threads=THREADS)
    scene = lact.read_scene(os.path.join(fixture, "index.json"), inputs="0,1,2", targets="3,4")
    assert scene.inputs == [0, 1, 2] and scene.targets == [3, 4]
    state = encode_inputs(model, scene)
    t = scene.targets
    got = model.render(state, scene.intrinsics[t], scene.c2w[t])
    assert got.shape == (2, 32, 48, 3) and got.dtype == np.float32
    err = float(np.abs(got - expected_render(fixture)).max())
    print("parity (%s): max abs error %.3g" % (os.path.basename(fixture), err))
    assert err <= 1e-4
    np.testing.assert_array_equal(got, cli_render(fixture))


def test_one_camera_is_a_row_of_many(model, scene):
    state = encode_inputs(model, scene)
    many = model.render(state, scene.intrinsics[[3]], scene.c2w[[3]])
    one = model.render(state, scene.intrinsics[3], scene.c2w[3])
    assert one.shape == (32, 48, 3)
    np.testing.assert_array_equal(one, many[0])


def test_state_save_load(lact, model, scene, tmp_path):
    state = encode_inputs(model, scene)
    assert state.size == (32, 48) and state.nbytes > 0
    path = str(tmp_path / "state.safetensors")
    state.save(path)
    loaded = lact.State.load(path, model)
    t = scene.targets
    np.testing.assert_array_equal(model.render(loaded, scene.intrinsics[t], scene.c2w[t]),
                                  model.render(state, scene.intrinsics[t], scene.c2w[t]))


def test_metrics_match_their_definitions(lact, model, scene):
    state = encode_inputs(model, scene)
    t = scene.targets
    got = model.render(state, scene.intrinsics[t], scene.c2w[t])
    gt = scene.images[t]
    mse = float(np.mean((np.clip(got[0], 0, 1).astype(np.float64) - gt[0]) ** 2))
    assert abs(lact.psnr(got[0], gt[0]) - (-10 * np.log10(mse))) < 1e-6
    assert lact.psnr(gt[0], gt[0]) == 100.0
    # 8-bit images (a PIL image as numpy reads it) over 255, as encode takes them (before: a TypeError).
    eight_bit = np.round(gt[0] * 255).astype(np.uint8)
    over_255 = eight_bit.astype(np.float32) / 255
    mse = float(np.mean((np.clip(got[0], 0, 1).astype(np.float64) - over_255) ** 2))
    assert abs(lact.psnr(got[0], eight_bit) - (-10 * np.log10(mse))) < 1e-6
    assert lact.ssim(eight_bit, got[0]) == lact.ssim(over_255, got[0])
    assert abs(lact.ssim(gt[0], gt[0]) - 1.0) < 1e-9
    s = lact.ssim(got[0], gt[0])
    assert 0 < s < 1


def test_ssim_is_scikit_image_ssim(lact, model, scene):
    metrics = pytest.importorskip("skimage.metrics")
    state = encode_inputs(model, scene)
    t = scene.targets
    got = model.render(state, scene.intrinsics[t], scene.c2w[t])
    for a, b in zip(got, scene.images[t]):
        reference = metrics.structural_similarity(a.astype(np.float64), b.astype(np.float64), gaussian_weights=True,
                                                  sigma=1.5, data_range=1.0, channel_axis=-1)
        assert abs(lact.ssim(a, b) - reference) < 1e-5
