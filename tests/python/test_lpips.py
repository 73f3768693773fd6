"""lact.lpips against a float64 PyTorch implementation of the lpips package's definition (tests/reference/lpips_reference_test.py
writes random weights in the two published formats and converts them), and its refusals."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import lpips_reference_test as reference  # noqa: E402


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("lpips"))
    alexnet, linear, path = reference.write_weights(folder)
    return alexnet, linear, path


def test_matches_pytorch(lact, weights):
    alexnet, linear, path = weights
    rng = np.random.default_rng(3)
    for height, width in ((31, 31), (48, 64)):
        a = rng.random((height, width, 3), dtype=np.float32)
        b = np.clip(a + rng.normal(0, 0.2, a.shape), 0, 1).astype(np.float32)
        expected = reference.torch_lpips(a, b, alexnet, linear)
        assert abs(lact.lpips(a, b, weights=path) - expected) < 1e-5
        assert abs(lact.lpips(a.astype(np.float64), b, path) - expected) < 1e-5  # any float array
        assert lact.lpips(a, a, weights=path) == pytest.approx(0.0, abs=1e-12)


def test_refusals_name_the_problem(lact, weights, tmp_path):
    _, _, path = weights
    a = np.full((40, 40, 3), 0.5, np.float32)
    with pytest.raises(lact.Error, match="no_such"):
        lact.lpips(a, a, weights=str(tmp_path / "no_such.safetensors"))
    with pytest.raises(lact.Error, match="too small"):
        lact.lpips(a[:30], a[:30], weights=path)
    with pytest.raises(ValueError, match="b: expected the shape of a"):
        lact.lpips(a, a[:35], weights=path)
    with pytest.raises(TypeError, match="^weights: expected a path"):
        lact.lpips(a, a, weights=3)


def test_weights_as_a_path_like(lact, weights):
    # Before: pathlib.Path was pybind11's TypeError "incompatible function arguments", printing both images.
    _, _, path = weights
    rng = np.random.default_rng(4)
    a, b = rng.random((2, 40, 40, 3), dtype=np.float32)
    assert lact.lpips(a, b, pathlib.Path(path)) == lact.lpips(a, b, path) == lact.lpips(a, b, os.fsencode(path))


def test_default_weights_are_the_cached_ones(lact, weights, tmp_path, monkeypatch):
    """Without weights, lpips uses those `lact model fetch lpips` cached, as `lact render` does by default
    (pipeline/model_cache.h: $XDG_CACHE_HOME/lact/lpips.safetensors with its record lpips.json)."""
    _, _, path = weights
    rng = np.random.default_rng(5)
    a, b = rng.random((2, 40, 40, 3), dtype=np.float32)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(lact.Error, match=r"^weights: no LPIPS weights are cached: `lact model fetch lpips` fetches"):
        lact.lpips(a, b)
    cache = tmp_path / "lact"
    cache.mkdir()
    shutil.copyfile(path, cache / "lpips.safetensors")
    record = {"name": "lpips", "kind": "metric", "config": "-", "source": "test", "sha256": "-", "height": 0,
              "width": 0, "input_views": 0, "bytes": 0}
    (cache / "lpips.json").write_text(json.dumps(record))
    assert lact.lpips(a, b) == lact.lpips(a, b, path)
    cli = os.environ.get("LACT_CLI")
    if cli:  # the CLI finds the same file
        p = subprocess.run([cli, "model", "list"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
        assert str(cache / "lpips.safetensors") in p.stdout, p.stdout + p.stderr


def test_docstring_names_the_commands_that_make_the_weights(lact):
    # Before: `python3 -m tools.convert_checkpoint --lpips`, where the guide names `lact model fetch lpips` and
    # `lact model convert --lpips`.
    assert "lact model fetch lpips" in lact.lpips.__doc__ and "lact model convert --lpips" in lact.lpips.__doc__


@pytest.fixture(scope="module")
def vgg_weights(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("lpips_vgg"))
    features, linear, path = reference.write_vgg_weights(folder)
    return features, linear, path


def test_vgg_weights_decide_the_net_and_net_checks_them(lact, weights, vgg_weights):
    """A VGG16 file measures LPIPS-VGG (torchvision's vgg16 features in float64, reference.torch_lpips_vgg);
    net='vgg' given an AlexNet file is refused naming both."""
    features, linear, path = vgg_weights
    rng = np.random.default_rng(8)
    a, b = rng.random((2, 16, 20, 3), dtype=np.float32)  # 16: VGG16's smallest side, under AlexNet's 31
    expected = reference.torch_lpips_vgg(a, b, reference.vgg16_features(features), linear)
    assert abs(lact.lpips(a, b, weights=path) - expected) < 1e-5
    assert lact.lpips(a, b, weights=path, net="vgg") == lact.lpips(a, b, weights=path)
    with pytest.raises(lact.Error, match=r"^net: vgg, but .* holds LPIPS weights with AlexNet"):
        lact.lpips(a, b, weights=weights[2], net="vgg")
    with pytest.raises(lact.Error, match=r"^net: alex, but .* holds LPIPS weights with VGG16"):
        lact.lpips(a, b, weights=path, net="alex")
    with pytest.raises(ValueError, match=r"^net: expected 'alex' or 'vgg'"):
        lact.lpips(a, b, weights=path, net="squeeze")


def test_net_vgg_takes_the_cached_vgg_weights(lact, vgg_weights, tmp_path, monkeypatch):
    """net='vgg' without weights: those `lact model fetch lpips-vgg` cached (lpips-vgg.safetensors, record
    lpips-vgg.json), as `lact render --lpips-net vgg`."""
    _, _, path = vgg_weights
    rng = np.random.default_rng(9)
    a, b = rng.random((2, 32, 32, 3), dtype=np.float32)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(lact.Error, match=r"^weights: no LPIPS weights are cached: `lact model fetch lpips-vgg`"):
        lact.lpips(a, b, net="vgg")
    cache = tmp_path / "lact"
    cache.mkdir()
    shutil.copyfile(path, cache / "lpips-vgg.safetensors")
    record = {"name": "lpips-vgg", "kind": "metric", "config": "lpips v0.1 vgg16", "source": "test", "sha256": "-",
              "height": 0, "width": 0, "input_views": 0, "bytes": 0}
    (cache / "lpips-vgg.json").write_text(json.dumps(record))
    assert lact.lpips(a, b, net="vgg") == lact.lpips(a, b, path)
    with pytest.raises(lact.Error, match=r"`lact model fetch lpips` fetches"):  # the default stays AlexNet's
        lact.lpips(a, b)
