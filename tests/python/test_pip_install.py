"""`pip install .` (issue 52, item 4): offline (--no-build-isolation, --no-index), into a fresh virtual
environment that sees the system's numpy; then `import lact` works there without PYTHONPATH, from another folder,
and renders the fixture's targets as the module of build/python does."""
import os
import subprocess
import sys

from conftest import FIXTURE, ROOT


def test_pip_install_into_a_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", ROOT],
                       capture_output=True, text=True, env=env, timeout=1800, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    probe = ("import lact, numpy as np; m = lact.Model(%r, threads=2); "
             "s = lact.read_scene(%r, inputs='0,1,2', targets='3,4'); i, t = s.inputs, s.targets; "
             "st = m.encode(s.images[i], s.intrinsics[i], s.c2w[i]); "
             "np.save(%r, m.render(st, s.intrinsics[t], s.c2w[t])); print(lact.__file__)") % (
        os.path.join(FIXTURE, "model.safetensors"), os.path.join(FIXTURE, "index.json"), str(tmp_path / "venv.npy"))
    p = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env, timeout=300, cwd="/")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().startswith(str(venv)), p.stdout  # the installed module, not build/python's
    import lact
    import numpy as np
    m = lact.Model(os.path.join(FIXTURE, "model.safetensors"), threads=2)
    s = lact.read_scene(os.path.join(FIXTURE, "index.json"), inputs="0,1,2", targets="3,4")
    i, t = s.inputs, s.targets
    here = m.render(m.encode(s.images[i], s.intrinsics[i], s.c2w[i]), s.intrinsics[t], s.c2w[t])
    np.testing.assert_array_equal(np.load(str(tmp_path / "venv.npy")), here)
