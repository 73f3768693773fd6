#!/usr/bin/env python3
"""The README's paste-able block and its checkpoint conversion command, run as written so they cannot rot.

Usage: PYTHONPATH=tests/common:. python3 tests/docs/readme_block_test.py --lact build/app/lact --root . --fixture ../shared/fixtures/lact_tiny

The block (between <!-- readme-block:begin --> and <!-- readme-block:end --> in README.md) runs command by
command, verbatim, with `bash -c` in a scratch folder laid out like the checkout (build/app/lact, models/,
examples/, tools/ linked in), so its out/ goes there. The `lact view` line runs under xvfb-run with a scripted
exit appended (skipped, saying so, without xvfb-run or a viewer build). Each command must exit 0 and write what
its flags name; the first render must beat copying the nearest input, as the README's picture says.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

ARGS = None
BEGIN, END = "<!-- readme-block:begin -->", "<!-- readme-block:end -->"
CONVERT = "/usr/bin/python3 -m tools.convert_checkpoint"
VIEW_EXIT = " --camera 18 --frames 5 --threads 1 --screenshot out/readme_view.png --exit"


def readme():
    with open(os.path.join(ARGS.root, "README.md"), encoding="utf-8") as f:
        return f.read()


def block_commands(text):
    """The block's commands: comments and blank lines dropped, backslash continuations joined."""
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README.md needs one %s ... %s block" % (BEGIN, END)
    body = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    commands, pending = [], ""
    for line in body.splitlines():
        if not pending and (not line.strip() or line.startswith("#") or line.startswith("```")):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        commands.append(pending + line)
        pending = ""
    return commands


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def flag(argv, *names):
    for i, a in enumerate(argv[:-1]):
        if a in names:
            return argv[i + 1]
    return None


def lact_scratch():
    """A folder laid out like the checkout after scripts/setup.sh."""
    work = tempfile.mkdtemp(prefix="lact_readme_")
    os.makedirs(os.path.join(work, "build", "app"))
    os.symlink(os.path.abspath(ARGS.lact), os.path.join(work, "build", "app", "lact"))
    for name in ("models", "examples", "tools"):
        os.symlink(os.path.join(os.path.abspath(ARGS.root), name), os.path.join(work, name))
    return work


class ReadmeBlockTest(unittest.TestCase):
    def run_line(self, work, line, timeout=600):
        t0 = time.time()
        p = subprocess.run(["bash", "-c", line], cwd=work, capture_output=True, text=True, timeout=timeout)
        print("  %.1f s, rc %d: %s" % (time.time() - t0, p.returncode, line[:100]))
        return p

    def check_outputs(self, work, argv, p):
        """What the command's own flags say it writes, checked on disk."""
        out, target, video = flag(argv, "--out"), flag(argv, "-o"), flag(argv, "--video")
        if target:
            self.assertTrue(os.path.getsize(os.path.join(work, target)) > 0, target)
        if video:
            self.assertTrue(os.path.getsize(os.path.join(work, video)) > 0, video)
        if argv[1] == "path":
            frames = load_json(os.path.join(work, target))["frames"]
            self.assertEqual(len(frames), int(flag(argv, "--frames")))
        if argv[1] == "render" and flag(argv, "--targets"):
            report = load_json(os.path.join(work, out, "report.json"))
            scene = report["scenes"][0]
            if "--save-images" in argv:
                for v in scene["views"]:
                    self.assertTrue(os.path.exists(os.path.join(work, out, scene["folder"], "%d.png" % v["index"])))
            return report
        if argv[1] == "render" and flag(argv, "--path"):
            path = load_json(os.path.join(work, flag(argv, "--path")))
            pngs = [f for f in os.listdir(os.path.join(work, out)) if f.endswith(".png")]
            self.assertEqual(len(pngs), len(path["frames"]), "one frame per camera of the path")
        if argv[1] == "bench":
            # LaCT against full attention, and the plot: drawn with its title band over the 420-pixel panels
            # (bench/plot.h), or its refusal when the machine was too busy to trust the timings.
            self.assertIn("| lact |", p.stdout)
            self.assertIn("| full |", p.stdout)
            plot = flag(argv, "--plot")
            self.assertTrue(plot, "the README's bench line draws a plot")
            if os.path.exists(os.path.join(work, plot)):
                with open(os.path.join(work, plot), "rb") as f:
                    width, height = struct.unpack(">II", f.read(24)[16:24])
                self.assertEqual(width, 2 * 560)
                self.assertGreater(height, 420 + 2 * 14, "the plot has no title")
            else:
                self.assertIn("--plot %s not drawn" % plot, p.stderr)
        return None

    def test_block(self):
        commands = block_commands(readme())
        verbs = [shlex.split(c)[1] + (" --state" if "--state" in c else "") + (" --video" if "--video" in c else "")
                 for c in commands]
        for needed in ("render", "view", "encode", "render --state", "path", "render --state --video", "bench"):
            self.assertIn(needed, verbs, "the README block lacks `lact %s`" % needed)
        work = lact_scratch()
        self.addCleanup(shutil.rmtree, work, True)
        t0, first_report = time.time(), None
        for line in commands:
            argv = shlex.split(line)
            self.assertEqual(argv[0], "build/app/lact", "every block line runs the built lact: " + line)
            if argv[1] == "view":
                self.run_view(work, line)
                continue
            p = self.run_line(work, line)
            self.assertEqual(p.returncode, 0, line + "\n" + p.stdout[-2000:] + p.stderr[-2000:])
            report = self.check_outputs(work, argv, p)
            if report and first_report is None:
                first_report = report
                cameras = load_json(os.path.join(ARGS.root, "examples", "gso_toy_64", "opencv_cameras.json"))
                inputs = flag(argv, "--inputs").split(",")
                self.assertEqual(len(report["scenes"][0]["views"]), len(cameras) - len(inputs))
        print("  the block took %.1f s" % (time.time() - t0))
        self.assertIsNotNone(first_report)
        self.assertGreater(first_report["psnr"], first_report["psnr_nearest_input"],
                           "the README says the shipped model beats copying the nearest input")

    def run_view(self, work, line):
        xvfb = shutil.which("xvfb-run")
        has_viewer = subprocess.run([ARGS.lact, "view", "--help"], capture_output=True).returncode == 0
        if not xvfb or not has_viewer:
            print("  skipped (%s): %s" % ("no xvfb-run" if not xvfb else "lact built without the viewer", line[:80]))
            return
        os.makedirs(os.path.join(work, "out"), exist_ok=True)
        p = self.run_line(work, "xvfb-run -a -s '-screen 0 1280x800x24' " + line + VIEW_EXIT)
        self.assertEqual(p.returncode, 0, line + "\n" + p.stdout[-2000:] + p.stderr[-2000:])
        self.assertTrue(os.path.getsize(os.path.join(work, "out", "readme_view.png")) > 0)


class ReadmeConversionTest(unittest.TestCase):
    """The README's conversion command and its table of official checkpoints."""

    def command(self):
        lines = [l for l in readme().splitlines() if l.startswith(CONVERT)]
        self.assertEqual(len(lines), 1, "README.md names one conversion command")
        return lines[0]

    def test_fixture_converts_and_renders_exactly(self):
        """The command on the fixture's model.pt (its own config given) renders the official images."""
        from tools.reference import safetensors_io
        argv = shlex.split(self.command())
        work = lact_scratch()
        self.addCleanup(shutil.rmtree, work, True)
        fx = os.path.abspath(ARGS.fixture)
        argv[3] = os.path.join(fx, "model.pt")  # the checkpoint argument
        argv[argv.index("-o") + 1] = "converted.safetensors"
        argv += ["--config", os.path.join(fx, "config.json")]
        p = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        out = os.path.join(work, "render")
        r = subprocess.run([ARGS.lact, "render", "--model", os.path.join(work, "converted.safetensors"), "--data",
                            os.path.join(fx, "index.json"), "--inputs", "0,1,2", "--targets", "3,4", "--out", out,
                            "--save-npy"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        got = np.stack([np.load(os.path.join(out, "scene", "%d.npy" % v)).transpose(2, 0, 1) for v in (3, 4)])
        expected = safetensors_io.load(os.path.join(fx, "expected.safetensors"))[0]["target_render_rendering"]
        err = float(np.abs(got - expected.numpy()).max())
        print("\n  converted fixture vs official render: max abs %.3g" % err)
        self.assertLessEqual(err, 1e-4)

    def test_command_as_written_knows_the_config(self):
        """Verbatim, the command finds obj_res256.pt's config by name: a fixture saved under that name is refused
        for not matching lact_l24_d768_ttt2x (the official object config), with exit 2 and no output."""
        work = lact_scratch()
        self.addCleanup(shutil.rmtree, work, True)
        argv = shlex.split(self.command())
        shutil.copy(os.path.join(ARGS.fixture, "model.pt"), os.path.join(work, argv[3]))
        p = subprocess.run(["bash", "-c", self.command()], cwd=work, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("does not match config lact_l24_d768_ttt2x: ", p.stderr)
        self.assertIn("first: missing key blocks.2.", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)  # one line, not one per key
        self.assertFalse(os.path.exists(os.path.join(work, argv[argv.index("-o") + 1])))

    def test_table_matches_converter(self):
        """Each checkpoint of the README's table maps to the config the table names, and an unknown name without
        --config is one line, exit 2."""
        from tools.checkpoint_names import official_checkpoint
        rows = [l for l in readme().splitlines() if re.match(r"\| `(obj|scene)_res", l)]
        names = 0
        for row in rows:
            config = re.findall(r"`(lact_l\d+_d\d+_ttt\dx)`", row)[-1]
            for name in re.findall(r"`((?:obj|scene)_res[0-9x]+\.pt)`", row):
                self.assertEqual(official_checkpoint(name)["config"], config, name)
                names += 1
        self.assertEqual(names, 10, "the official repository lists 3 object and 7 scene checkpoints")
        self.assertIsNone(official_checkpoint("obj_res300.pt"))
        p = subprocess.run([sys.executable, "-m", "tools.convert_checkpoint", os.path.join(ARGS.fixture, "model.pt"),
                            "-o", os.path.join(tempfile.gettempdir(), "never_written.safetensors")],
                           cwd=ARGS.root, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("not an official checkpoint name", p.stderr)

    def test_builtin_config_size(self):
        """The built-in object config has the paper's 312M parameters (312,298,056, the research notes' count
        from the official module definitions)."""
        from tools.checkpoint_names import builtin_config
        from tools.reference.lact_reference import LaCTModel
        model = LaCTModel(builtin_config("lact_l24_d768_ttt2x"))
        self.assertEqual(sum(v.numel() for v in model.state_dict().values()), 312298056)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--lact", required=True)
    ap.add_argument("--root", required=True, help="the checkout (README.md, models/, examples/, tools/)")
    ap.add_argument("--fixture", required=True)
    ARGS, rest = ap.parse_known_args()
    ARGS.root = os.path.abspath(ARGS.root)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
