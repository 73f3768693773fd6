"""Shared set-up of the `lact` module's tests: the fixtures' paths and a numpy reader of their expected tensors.

Run by ctest (test `python`) as: PYTHONPATH=build/python LACT_CLI=build/app/lact /usr/bin/python3 -m pytest tests/python
"""
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.environ.get("LACT_FIXTURE_DIR", os.path.join(ROOT, "..", "shared", "fixtures", "lact_tiny"))
FIXTURE_V2 = os.environ.get("LACT_FIXTURE_V2_DIR", os.path.join(ROOT, "..", "shared", "fixtures", "lact_tiny_v2"))
THREADS = 2  # the same thread count for the module and the CLI it is compared with


def read_safetensors(path):
    """{name: float32 array} of a safetensors file's F32 tensors (independent of lact's reader)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"])
    return out


@pytest.fixture(scope="session")
def lact():
    import lact as module
    return module


@pytest.fixture(scope="session")
def model(lact):
    return lact.Model(os.path.join(FIXTURE, "model.safetensors"), threads=THREADS)


@pytest.fixture(scope="session")
def scene(lact):
    return lact.read_scene(os.path.join(FIXTURE, "index.json"), inputs="0,1,2", targets="3,4")


def encode_inputs(model, scene):
    i = scene.inputs
    return model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])


def run_in_fresh_python(code, timeout=120, env=None):
    """`code` in a fresh interpreter with the fixture's `model` (one thread), `scene` (inputs 0-2, targets 3-4) and
    `state` ready, and os, pickle, resource, sys and numpy (np) imported: (exit status, stdout + stderr)."""
    model = os.path.join(FIXTURE, "model.safetensors")
    index = os.path.join(FIXTURE, "index.json")
    script = textwrap.dedent("""\
        import os, pickle, resource, sys
        import numpy as np
        import lact
        model = lact.Model(%r, threads=1)
        scene = lact.read_scene(%r, inputs="0,1,2", targets="3,4")
        i = scene.inputs
        state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
        """ % (model, index)) + textwrap.dedent(code)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout + p.stderr
