"""lact.lpips against a float64 PyTorch implementation of the lpips package's definition (tests/reference/lpips_reference_test.py
writes random weights in the two published formats and converts them), and its refusals."""
import os
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
    with pytest.raises(TypeError):
        lact.lpips(a, a)  # the weights are not optional
