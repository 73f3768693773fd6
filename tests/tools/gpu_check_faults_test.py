#!/usr/bin/env python3
"""tools/gpu_check.sh runs once, unseen, on a lent GPU: its faults are injected here, on the CPU. A fake bundle
(shell scripts for the binaries, driven by a plan: a step that segfaults, one that hangs ignoring SIGTERM, one that
writes garbage JSON, a library that is not there, a broken libz among its libraries, cuDNN older than 9.13), a
hanging nvidia-smi, an official code that fails to import, a bundle built from other sources, a kill -9 mid-step
and an $OUT that cannot be written.
Each time every later step still runs, each failure is one line saying why, the table prints, and $OUT holds only
the few small files the device tool returns, renewed after every step.

  PYTHONPATH=tests/common:. python3 tests/tools/gpu_check_faults_test.py
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Stands in for each bundle binary: does what the plan says for its name and LACT_ATTENTION (default: pass).
FAKE_BINARY = r"""#!/usr/bin/env bash
name=$(basename "$0")
action=$(awk -v n="$name" -v p="${LACT_ATTENTION:-none}" '$1 == n && $2 == p {print $3}' "$FAKE_PLAN")
case "$action" in
  segv) kill -SEGV $$ ;;
  hang) echo $$ >"$FAKE_DIR/hang_started"; trap '' TERM; exec sleep 1000 ;;
  spew) head -c 3000000 /dev/zero | tr '\0' 'x' ;;
  old_cudnn) echo "lact: bf16 attention through lact's own kernel: cuDNN 9.10.2 is older than 9.13.0" >&2 ;;
  no_library) echo "$0: error while loading shared libraries: libopenblas.so.0: cannot open shared object file" >&2
    exit 127 ;;
esac
if [ "$name" = lact ] && [ "$1" = info ]; then echo "cuda  NVIDIA H100 80GB HBM3 (fake)"; exit 0; fi
if [ "$name" = lact ]; then
  while [ $# -gt 0 ] && [ "$1" != --json ]; do shift; done
  if [ "$action" = garbage ]; then printf '\xff\xfe\x00garbage\n'; printf '{"rows": [{"model": "la' >"$2"; exit 0; fi
  echo "  lact 48 x 512^2; attention cudnn 9.13 (fake)"
  cat >"$2" <<'EOF'
{"rows": [{"model": "lact", "attention": "cudnn", "precision": "bf16", "views": 48, "height": 512, "width": 512,
  "encode_s": 2.0, "render_fps": 20.0, "encode_profile": [{"op": "attention", "ms": 200.0}, {"op": "gemm", "ms": 9}]}]}
EOF
  exit 0
fi
echo "[==========] fake $name"
echo "[  PASSED  ] 3 tests."
"""


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class GpuCheckFaults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpu_check_faults_")
        t = cls.tmp
        staged = os.path.join(t, "staged")
        for name in ("lact", "test_ops", "test_parity", "test_newton_schulz", "test_memory_estimate"):
            write(os.path.join(staged, "bin", name), FAKE_BINARY, 0o755)
        # A real program that needs a library the bundle lacks: ldd names it.
        write(os.path.join(t, "c", "lib.c"), "int fake_missing(void) { return 1; }\n")
        write(os.path.join(t, "c", "main.c"), "int fake_missing(void);\nint main(void) { return fake_missing(); }\n")
        lib = os.path.join(t, "c", "libfake_missing.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libfake_missing.so", "-o", lib,
                        os.path.join(t, "c", "lib.c")], check=True)
        subprocess.run(["cc", "-o", os.path.join(staged, "bin", "needs_missing"), os.path.join(t, "c", "main.c"), lib],
                       check=True)
        write(os.path.join(staged, "commit"), "fake123\n")
        # A library Python needs too, broken: only the bundle's programs may see the bundle's libraries.
        write(os.path.join(staged, "lib", "libz.so.1"), "not a library\n")
        # The bundle's source list (as tools/gpu/source_list.sh writes it) where one file's hash differs: built
        # from sources this tree no longer has.
        with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
            license_hash = hashlib.sha256(f.read()).hexdigest()
        write(os.path.join(staged, "sources.sha256"), f"{license_hash}  LICENSE\n{'0' * 64}  CMakeLists.txt\n")
        cls.bundle = os.path.join(t, "bundle.tar.xz")
        subprocess.run(["tar", "-C", staged, "-cJf", cls.bundle, "."], check=True)
        # An official code that cannot be imported; the machine's tools as shims in front of PATH.
        write(os.path.join(t, "official", "lact_nvs", "model.py"), "import flash_attn_not_on_this_image\n")
        write(os.path.join(t, "shim", "nvidia-smi"),
              "#!/bin/sh\ngrep -q '^nvidia-smi hang' \"$FAKE_PLAN\" && exec sleep 60\n"
              "echo 'NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB'\n", 0o755)
        write(os.path.join(t, "shim", "compute-sanitizer"),
              "#!/bin/sh\necho '========= ERROR SUMMARY: 0 errors'\n", 0o755)
        write(os.path.join(t, "shim", "python3"), "#!/bin/sh\nexec %s \"$@\"\n" % sys.executable, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def env(self, name, plan, out):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        write(os.path.join(d, "plan"), plan)
        return d, dict(os.environ, OUT=out, FAKE_PLAN=os.path.join(d, "plan"), FAKE_DIR=d,
                       PATH=os.path.join(self.tmp, "shim") + ":" + os.environ["PATH"], LACT_GPU_BUNDLE=self.bundle,
                       LACT_GPU_OFFICIAL=os.path.join(self.tmp, "official"), LACT_GPU_WORK=os.path.join(d, "work"),
                       LACT_GPU_STEP_CAP="6", GPU_CHECK_SECONDS="300", LACT_GPU_DRY_RUN="0")

    def start(self, env):
        p = subprocess.Popen(["bash", "tools/gpu_check.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        self.addCleanup(self.end, p)
        return p

    @staticmethod
    def end(p):
        """A run a failed check left going ends with the test."""
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()

    def status(self, text, step):
        """The one status line of a step, from the final summary."""
        lines = [s for s in text.splitlines() if s.startswith(step + ":")]
        self.assertEqual(len(lines), 1, f"{step}: {lines}\n{text}")
        return lines[0]

    def assert_returned_files(self, out, names):
        """What the device tool brings back: at most 8 plain files, small, named in its letters."""
        self.assertEqual(sorted(os.listdir(out)), sorted(names))
        for n in names:
            self.assertRegex(n, r"^[A-Za-z0-9._-]+$")
            self.assertLess(os.path.getsize(os.path.join(out, n)), 1 << 20)

    def test_every_fault_is_one_line_and_every_later_step_runs(self):
        plan = ("nvidia-smi hang\ntest_ops cudnn old_cudnn\ntest_ops own segv\ntest_parity cudnn hang\n"
                "test_parity own spew\n"
                "lact own garbage\ntest_ops wmma no_library\n")
        out = os.path.join(self.tmp, "faults_out")
        _, env = self.env("faults", plan, out)
        p = self.start(env)
        text = p.communicate(timeout=240)[0]
        self.assertEqual(p.returncode, 0, text)
        summary = text[text.index("== lact gpu_check =="):]
        self.assertIn("nvidia-smi: none, or it failed", summary)  # it hung: time-boxed, the run went on
        self.assertIn("bundle: FAILED: libraries not found: libfake_missing.so", summary)
        self.assertIn("!!! bundle fake123: MISMATCH: 1 of its 2 source files differ from this tree's (CMakeLists.txt)",
                      summary)
        self.assertRegex(self.status(summary, "test_ops LACT_ATTENTION=cudnn"),
                         r": ok; .*attention fallbacks: 1 \(first: cuDNN 9.10.2 is older than 9.13.0\)")
        self.assertIn(": FAILED: killed by SIGSEGV", self.status(summary, "test_ops LACT_ATTENTION=own"))
        self.assertIn(": FAILED: timed out after 6 s", self.status(summary, "test_parity LACT_ATTENTION=cudnn"))
        self.assertIn(": ok", self.status(summary, "test_parity LACT_ATTENTION=own"))
        self.assertIn("skipped: this path timed out before",
                      self.status(summary, "test_newton_schulz LACT_ATTENTION=cudnn"))
        self.assertIn("FAILED: exit 127; last line: ", self.status(summary, "test_ops LACT_ATTENTION=wmma"))
        self.assertIn("libopenblas.so.0: cannot open", self.status(summary, "test_ops LACT_ATTENTION=wmma"))
        # (torch itself where this Python has none: a failing import all the same)
        self.assertRegex(self.status(summary, "official"), r"FAILED: exit 1; last line: ModuleNotFoundError: No "
                         r"module named '(flash_attn_not_on_this_image|torch)'")
        self.assertIn(": ok; ========= ERROR SUMMARY: 0 errors", self.status(summary, "sanitizer racecheck"))
        for step in ("bench LACT_ATTENTION=wmma", "bench bf16_activations_off", "bench split_k_off", "bench tf32"):
            self.assertIn(": ok", self.status(summary, step))
        # The table: the cudnn row's attention rate by hand: 4 x 4096^2 x 768 x 48 views x 24 layers / 0.2 s.
        self.assertIn("| lact, LACT_ATTENTION=cudnn | cudnn | bf16 | 48 x 512^2 | 2.000 | 20.0 | 297 | -x | -x |",
                      summary)
        self.assertRegex(summary, r"\| lact, LACT_ATTENTION=own \| FAILED: unreadable bench_attn_own.json: ")
        self.assert_returned_files(out, ["gpu_check.tar.gz", "summary.txt"])
        with open(os.path.join(out, "summary.txt")) as f:
            self.assertEqual(f.read().strip(), summary.strip())
        with tarfile.open(os.path.join(out, "gpu_check.tar.gz")) as t:
            self.assertIn("gpu_check/test_parity_cudnn.log", t.getnames())
            spewed = t.extractfile("gpu_check/test_parity_own.log").read()
        # 3 MB of x, then the fake's two gtest lines: its first 200 kB and last 800 kB are kept.
        tail = b"[==========] fake test_parity\n[  PASSED  ] 3 tests.\n"
        cut = b"\n[... %d bytes cut by gpu_check ...]\n" % (3000000 + len(tail) - 1000000)
        self.assertEqual(spewed, b"x" * 200000 + cut + b"x" * (800000 - len(tail)) + tail)

    def test_a_kill_mid_step_leaves_the_steps_before_it_in_out(self):
        out = os.path.join(self.tmp, "kill_out")
        d, env = self.env("kill", "test_parity cudnn hang\n", out)
        env["LACT_GPU_STEP_CAP"] = "60"
        p = self.start(env)
        started = os.path.join(d, "hang_started")
        for _ in range(600):
            if os.path.exists(started) or p.poll() is not None:
                break
            time.sleep(0.1)
        self.assertTrue(os.path.exists(started), "the hanging step never started")
        os.killpg(p.pid, signal.SIGKILL)  # as the device tool does at its time limit
        p.communicate(timeout=30)
        time.sleep(0.2)  # the pid is written just before the exec
        with open(started) as f:
            os.kill(int(f.read()), signal.SIGKILL)  # the step's own time box runs in a process group of its own
        self.assert_returned_files(out, ["gpu_check.tar.gz", "summary.txt"])
        with open(os.path.join(out, "summary.txt")) as f:
            summary = f.read()
        for step in ("test_ops LACT_ATTENTION=cudnn", "test_ops LACT_ATTENTION=own"):
            self.assertIn(": ok", self.status(summary, step))
        self.assertNotIn("test_parity", summary)
        with tarfile.open(os.path.join(out, "gpu_check.tar.gz")) as t:
            self.assertIn("gpu_check/test_ops_own.log", t.getnames())

    def test_an_out_that_cannot_be_written_still_runs_every_step(self):
        blocker = os.path.join(self.tmp, "a_file")
        write(blocker, "not a folder\n")
        _, env = self.env("no_out", "", os.path.join(blocker, "out"))
        p = self.start(env)
        text = p.communicate(timeout=240)[0]
        self.assertEqual(p.returncode, 0, text)
        self.assertIn("cannot write to $OUT", text)
        summary = text[text.index("== lact gpu_check =="):]
        self.assertIn(": ok", self.status(summary, "bench tf32"))
        self.assertIn("NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB", summary)
        self.assertIn("| lact, LACT_ATTENTION=wmma | cudnn | bf16 | 48 x 512^2 | 2.000 | 20.0 | 297 |", summary)


class SummaryRatios(unittest.TestCase):
    def test_ratios_against_the_official_code(self):
        d = tempfile.mkdtemp(prefix="gpu_summary_")
        try:
            bench = {"rows": [{"model": "lact", "attention": "cudnn", "precision": "bf16", "views": 48,
                               "height": 512, "width": 512, "encode_s": 0.5, "render_fps": 80.0}]}
            official = {"torch": "2.11", "precision": "bf16", "views": 48, "size": 512, "encode_s": 1.25,
                        "render_fps": 32.0, "stage": "render timed; SDPA not yet"}
            for name, value in (("bench_attn_cudnn.json", bench), ("official.json", official)):
                with open(os.path.join(d, name), "w") as f:
                    json.dump(value, f)
            text = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu", "summary.py"), d],
                                  capture_output=True, text=True, check=True).stdout
            # encode: official / this = 1.25 / 0.5; render: this / official = 80 / 32.
            self.assertIn("| 0.500 | 80.0 | - | 2.50x | 2.50x |", text)
            self.assertTrue(re.search(r"official lact_nvs \(torch 2.11, render timed; SDPA not yet\) .*\| 1.00x \|",
                                      text), text)
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main(verbosity=2)
