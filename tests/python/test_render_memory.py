"""Model.render's memory check covers the whole call: every camera of it, its images kept together, as the CLI checks
a camera path's call (pipeline/run.cpp, Run::check_render_call)."""
import os
import re
import subprocess
import tempfile

import pytest

from conftest import FIXTURE, run_in_fresh_python

MODEL = os.path.join(FIXTURE, "model.safetensors")
INDEX = os.path.join(FIXTURE, "index.json")


def run_python(code, env=None):
    """conftest.run_in_fresh_python with this file's time limit."""
    return run_in_fresh_python(code, timeout=300, env=env)


def estimate_notes(output):
    """The LACT_MEMORY_ESTIMATE=1 notes of the renders in `output`: [(views at once, size, parts but the process)]."""
    found = re.findall(r"rendering (\d+) views at (\d+x\d+) at a time: .*\n"
                       r"lact: note: estimate parts: process \d+ MiB, (.*)", output)
    return [(int(views), size, parts) for views, size, parts in found]


def test_a_call_of_many_cameras_is_estimated_as_the_cli_estimates_a_path():
    # Before: the check took one view of each size (1 view, 7 MiB of scratch for 8 cameras at 256x256), whatever the
    # call renders at once and keeps. The reference: `lact render --path` of 16 frames (two calls of 8) from the same
    # state, whose notes name the batch and the estimate's parts (the process's own part differs between processes).
    cli = os.environ.get("LACT_CLI")
    if not cli:
        pytest.skip("LACT_CLI (the lact executable) not set")
    with tempfile.TemporaryDirectory(prefix="lact_py_render_memory_") as tmp:
        status, output = run_python("""
            intrinsics, c2w = lact.camera_path("turntable", frames=16, size=(256, 256))
            state.save(%r)
            print("--- the call", file=sys.stderr, flush=True)
            images = model.render(state, intrinsics[:8], c2w[:8], size=(256, 256))
            assert images.shape == (8, 256, 256, 3)
            model.render(state, intrinsics[8:], c2w[8:], size=(256, 256))  # the same call again: checked once
            """ % os.path.join(tmp, "state.safetensors"), {"LACT_MEMORY_ESTIMATE": "1"})
        assert status == 0, output
        python_notes = estimate_notes(output.split("--- the call")[1])
        path = os.path.join(tmp, "path.json")
        p = subprocess.run([cli, "path", "turntable", "--frames", "16", "--size", "256x256", "-o", path],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        p = subprocess.run([cli, "render", "--state", os.path.join(tmp, "state.safetensors"), "--path", path,
                            "--out", os.path.join(tmp, "out"), "--threads", "1"], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, LACT_MEMORY_ESTIMATE="1"))
        assert p.returncode == 0, p.stdout + p.stderr
        cli_notes = estimate_notes(p.stderr)
    assert len(cli_notes) == 1 and cli_notes[0][0] == 8, p.stderr
    assert python_notes == cli_notes, (python_notes, cli_notes)


def test_a_call_of_many_cameras_beyond_memory_is_refused_before_rendering():
    # Under ulimit -d 80 MiB above what the process holds, one 256x256 view fits but 16 of them in one call (their
    # batches at once, 12 MiB of images kept) do not. Before: the check took one view, passed, and the render ran
    # out of memory in the middle (a MemoryError, or worse). The refusal says to render fewer cameras a call, and
    # both its cures render under the same limit: the suggested size for the 16, and one camera at 256x256.
    status, output = run_python("""
        data = int(next(l for l in open("/proc/self/status") if l.startswith("VmData")).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (data + (80 << 20), resource.RLIM_INFINITY))
        intrinsics, c2w = lact.camera_path("turntable", frames=16, size=(256, 256))
        try:
            model.render(state, intrinsics, c2w, size=(256, 256))
            raise SystemExit("no refusal")
        except lact.RenderMemoryError as e:
            assert e.size == (256, 256) and e.bytes_needed > e.bytes_available, (e.size, e.bytes_needed)
            assert str(e).endswith("or fewer cameras a call (this one renders 16)"), str(e)
            h, w = e.suggested_size
            print("suggested", h, w)
        images = model.render(state, intrinsics * h / 256, c2w, size=(h, w))
        assert images.shape == (16, h, w, 3) and np.isfinite(images).all()
        del images
        image = model.render(state, intrinsics[0], c2w[0], size=(256, 256))
        assert image.shape == (256, 256, 3)
        print("rendered")
        """)
    assert status == 0, output
    assert "suggested" in output and "rendered" in output, output
