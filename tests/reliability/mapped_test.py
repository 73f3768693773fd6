#!/usr/bin/env python3
"""Model and state files changed while lact renders from them, and a state rendered with another model.

lact maps model and state files and reads their weights in place. Another program may truncate such a file,
copy another model over it or write NaNs into it while a camera path renders. Each run must then end with one
`lact: FILE: changed while lact was using it` line and exit 1, and every frame it wrote must equal an
undisturbed run's frame byte for byte. A state must refuse a model other than the one it was encoded with, even
of the same shapes; a state written before states recorded their model loads with a one-line warning.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/mapped_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import os
import shutil
import struct
import subprocess
import sys
import time
import unittest

from cli_common import FixtureCase, one_error_line, parse_cli_args, read_safetensors, scaled_model, write_safetensors

ARGS = None
SANITIZED = bool(os.environ.get("LACT_SANITIZED"))
FRAMES = 40  # five batches of 8: the change lands while the first is written


def run(*argv, timeout=120):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       errors="replace")
    return p.returncode, p.stdout, p.stderr




def largest_tensor(path):
    """(file offset, byte count) of the largest tensor's data."""
    header, _ = read_safetensors(path)
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
    begin, end = max((e["data_offsets"] for n, e in header.items() if n != "__metadata__"), key=lambda o: o[1] - o[0])
    return 8 + length + begin, end - begin


def frames_in(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith("frame_") and f.endswith(".png"))


class Mapped(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.state = os.path.join(cls.tmp, "s.safetensors")
        cls.ok(run("encode", "--model", cls.model, "--data", os.path.join(cls.fx, "scene"), "--inputs", "0,1,2",
                   "-o", cls.state))
        cls.path = os.path.join(cls.tmp, "p.json")
        cls.ok(run("path", "turntable", "--frames", FRAMES, "--size", "32x48", "-o", cls.path))
        cls.other = os.path.join(cls.tmp, "other.safetensors")
        scaled_model(cls.model, cls.other, 0.9)
        cls.reference = os.path.join(cls.tmp, "reference")
        cls.ok(run("render", "--state", cls.state, "--model", cls.model, "--path", cls.path, "--out", cls.reference,
                   "--quiet"))
        assert len(frames_in(cls.reference)) == FRAMES

    @staticmethod
    def ok(result):
        rc, so, se = result
        assert rc == 0, "lact failed (rc %d): %s%s" % (rc, so, se)
        assert "runtime error" not in se, se  # UBSan, in the sanitizer build
        return se

    def one_line(self, rc, se, names, msg):
        return one_error_line(self, (rc, msg, se), names)

    def disturbed(self, name, change, which, video=False):
        """Renders the long path from copies of the model and state (and a video beside them); after the first
        frame appears, `change` (given the copy named by `which`) alters that file. The run must stop with one
        line naming it, leaving no video and no temporary."""
        folder = os.path.join(self.tmp, name)
        os.makedirs(folder)
        files = {"model": os.path.join(folder, "model.safetensors"), "state": os.path.join(folder, "s.safetensors")}
        shutil.copyfile(self.model, files["model"])
        shutil.copyfile(self.state, files["state"])
        out = os.path.join(folder, "out")
        extra = ["--video", os.path.join(folder, "v.mp4")] if video else []
        p = subprocess.Popen([ARGS.lact, "render", "--state", files["state"], "--model", files["model"], "--path",
                              self.path, "--out", out, "--quiet"] + extra, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, errors="replace")
        deadline = time.time() + 60
        while not (os.path.isdir(out) and frames_in(out)) and p.poll() is None and time.time() < deadline:
            time.sleep(0.001)
        change(files[which])
        try:
            _, se = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("%s: lact hung after the %s changed" % (name, which))
        msg = "%s: rc=%d stderr=%r" % (name, p.returncode, se[-2000:])
        line = self.one_line(p.returncode, se, [files[which], "changed while lact was using it"], msg)
        written = frames_in(out)
        self.assertGreater(len(written), 0, msg)
        self.assertLess(len(written), FRAMES, msg + " (the run went on to the end)")
        for frame in written:
            with open(os.path.join(out, frame), "rb") as a, open(os.path.join(self.reference, frame), "rb") as b:
                self.assertEqual(a.read(), b.read(), "%s: %s differs from the undisturbed run's" % (name, frame))
        self.assertEqual([f for f in os.listdir(out) if f.startswith(".")], [], msg + " (a temporary left)")
        self.assertEqual(sorted(os.listdir(folder)), ["model.safetensors", "out", "s.safetensors"], msg)
        return line

    def test_model_truncated(self):
        if SANITIZED:
            self.skipTest("ASan's own SIGBUS report comes before lact's handler")
        self.disturbed("truncated_model", lambda m: os.truncate(m, 0), "model")

    def test_another_model_copied_over_it(self):
        if SANITIZED:  # cp truncates first: a read in that moment is a SIGBUS, which ASan reports itself
            def overwrite(m):
                with open(self.other, "rb") as src, open(m, "r+b") as dst:
                    dst.write(src.read())
            self.disturbed("copied_over", overwrite, "model")
            return
        self.disturbed("copied_over", lambda m: subprocess.run(["cp", self.other, m], check=True), "model")

    def test_model_truncated_under_a_video(self):
        """The SIGBUS exit also stops ffmpeg and removes the video's temporary."""
        if SANITIZED:
            self.skipTest("ASan's own SIGBUS report comes before lact's handler")
        if not (shutil.which("ffmpeg") and shutil.which("ffprobe")):
            self.skipTest("no ffmpeg/ffprobe")
        self.disturbed("truncated_under_video", lambda m: os.truncate(m, 0), "model", video=True)

    def test_nans_written_over_a_tensor_same_size(self):
        def poison(m):
            offset, count = largest_tensor(m)
            with open(m, "r+b") as f:
                f.seek(offset)
                f.write(struct.pack("<f", float("nan")) * (count // 4))
        self.disturbed("nans", poison, "model")

    def test_state_truncated(self):
        if SANITIZED:
            self.skipTest("ASan's own SIGBUS report comes before lact's handler")
        self.disturbed("truncated_state", lambda s: os.truncate(s, 0), "state")

    def test_replaced_by_rename_the_run_keeps_its_file(self):
        """An atomic re-export (a new file renamed over the old name) leaves the open file intact: the run goes
        on to the end with the model it opened, its frames those of the undisturbed run."""
        folder = os.path.join(self.tmp, "renamed")
        os.makedirs(folder)
        model = os.path.join(folder, "model.safetensors")
        shutil.copyfile(self.model, model)
        out = os.path.join(folder, "out")
        p = subprocess.Popen([ARGS.lact, "render", "--state", self.state, "--model", model, "--path", self.path,
                              "--out", out, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while not (os.path.isdir(out) and frames_in(out)) and p.poll() is None:
            time.sleep(0.001)
        shutil.copyfile(self.other, model + ".new")
        os.rename(model + ".new", model)
        _, se = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, se)
        self.assertEqual(len(frames_in(out)), FRAMES)
        for frame in frames_in(out):
            with open(os.path.join(out, frame), "rb") as a, open(os.path.join(self.reference, frame), "rb") as b:
                self.assertEqual(a.read(), b.read(), frame)

    def test_state_refuses_another_model_of_the_same_shapes(self):
        out = os.path.join(self.tmp, "other_model")
        rc, so, se = run("render", "--state", self.state, "--model", self.other, "--targets", "3", "--out", out)
        line = self.one_line(rc, se, [self.state, self.model, self.other], "rc=%d stderr=%r" % (rc, se))
        self.assertIn("encode the scene with this model", line)
        self.assertFalse(os.path.exists(out) and os.listdir(out), "something written: %s" % out)

    def test_old_state_without_model_identity_warns_and_renders(self):
        header, data = read_safetensors(self.state)
        header["__metadata__"].pop("model_identity", None)  # as lact wrote states before it recorded its model
        old = os.path.join(self.tmp, "old_state.safetensors")
        write_safetensors(old, header, data)
        out = os.path.join(self.tmp, "old_out")
        rc, so, se = run("render", "--state", old, "--model", self.model, "--path", self.path, "--out", out, "--quiet")
        self.assertEqual(rc, 0, se)
        lines = se.strip().splitlines()
        self.assertEqual(len(lines), 1, se)
        self.assertTrue(lines[0].startswith("lact: warning: %s records no model identity" % old), se)
        self.assertIn(self.model, lines[0])
        for frame in frames_in(out):
            with open(os.path.join(out, frame), "rb") as a, open(os.path.join(self.reference, frame), "rb") as b:
                self.assertEqual(a.read(), b.read(), frame)


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
