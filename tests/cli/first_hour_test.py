#!/usr/bin/env python3
"""A new user's first hour without dead ends (issue 52, items 3 and 5), with real lact processes:

- a bare `lact` lists its commands (exit 0) instead of "A subcommand is required";
- one size syntax: --size 64 is 64x64 (the same images as --size 64x64), as --window and lact bench read it;
- `lact view` without a display points to `lact serve` (which takes the same flags);
- the guard rails' warnings of `lact render` (same words, same thresholds) on `lact view`'s and `lact serve`'s
  stderr when the scene opens, in lact serve's /api/scene and on its page: the shipped object model on the
  desk's scene-like cameras;
- a taken port suggests --port 0;
- a run estimated over an hour without --max-seconds is refused where no terminal can be asked, and --max-seconds'
  help says so;
- commands without --targets (encode, path) offer no `--inputs rest` and refuse it without asking for --targets.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/first_hour_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
       --data ../shared/data
"""
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from cli_common import ROOT, parse_cli_args, ran_ok

ARGS = None
SHIPPED = os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors")
EXAMPLE = os.path.join(ROOT, "examples", "gso_toy_64")
INPUTS = "16,20,24,28,34,38,42,46"
NO_DISPLAY = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}


def run(*argv, env=None, timeout=300):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       env=env or os.environ)
    return p.returncode, p.stdout, p.stderr


def warnings_in(stderr):
    return [l for l in stderr.splitlines() if l.startswith("lact: warning: ")]



def viewer_built():
    """False in a build without the viewer (CI's sanitizer build: -DLACT_VIEWER=OFF), where `lact view` says so."""
    rc, so, se = run("view", "--help")
    return rc == 0 and "not built" not in so + se

class FirstHour(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.desk = os.path.join(os.path.abspath(ARGS.data), "mydesk")

    def tearDown(self):
        self.tmp.cleanup()

    def test_bare_lact_lists_its_commands(self):
        so = ran_ok(run())
        for command in ("render", "encode", "view", "serve", "import", "model", "bench", "path", "info"):
            self.assertIn("\n  " + command + " ", so)

    def test_a_single_n_is_n_by_n(self):
        outs = []
        for size in ("64", "64x64"):
            out = os.path.join(self.tmp.name, size)
            so = ran_ok(run("render", "--model", SHIPPED, "--data", EXAMPLE, "--inputs", INPUTS, "--targets", "2,10",
                            "--size", size, "--out", out, "--quiet", "--threads", 2))
            self.assertIn("64x64 (--size)", so)
            outs.append(out)
        for view in ("2", "10"):
            with open(os.path.join(outs[0], "gso_toy_64", view + ".png"), "rb") as a, \
                    open(os.path.join(outs[1], "gso_toy_64", view + ".png"), "rb") as b:
                self.assertEqual(a.read(), b.read())

    def test_view_without_a_display_points_to_serve(self):
        if not viewer_built():
            self.skipTest("lact was built without the viewer")
        rc, so, se = run("view", "--model", SHIPPED, "--data", EXAMPLE, "--inputs", INPUTS, env=NO_DISPLAY)
        self.assertEqual(rc, 1, se)
        last = se.strip().splitlines()[-1]
        self.assertTrue(last.startswith("lact: "), se)
        self.assertIn("lact serve takes the same flags", last)
        self.assertNotIn("xvfb", se)

    def render_warnings(self, flags):
        rc, so, se = run("render", *flags, "--targets", "3", "--out", os.path.join(self.tmp.name, "r"), "--quiet",
                         "--threads", 2)
        ran_ok((rc, so, se))
        # The warnings before the work (the baseline's comes after the render, which the viewers do not do).
        return [w for w in warnings_in(se) if "nearest input" not in w]

    def desk_flags(self):
        if not os.path.exists(os.path.join(self.desk, "opencv_cameras.json")):
            self.skipTest("%s not present" % self.desk)
        return ["--model", SHIPPED, "--data", self.desk, "--inputs", "uniform:8", "--size", "64x112"]

    def test_view_warns_as_render_does(self):
        if not viewer_built():
            self.skipTest("lact was built without the viewer")
        flags = self.desk_flags()
        expected = self.render_warnings(flags)
        self.assertEqual(len(expected), 2, expected)  # scene-like cameras; distances beyond 2x 2.7
        rc, so, se = run("view", *flags, env=NO_DISPLAY)
        self.assertEqual(rc, 1)  # no display here: the warnings come first, as the scene opens
        self.assertEqual(warnings_in(se), expected)

    def test_serve_warns_on_its_terminal_as_render_does(self):
        flags = self.desk_flags()
        expected = self.render_warnings(flags)
        p = subprocess.Popen([ARGS.lact, "serve", *flags, "--port", "0", "--bind", "127.0.0.1", "--no-token",
                              "--threads", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            shown, deadline = "", time.time() + 120
            while "lact serve: " not in shown and time.time() < deadline and p.poll() is None:
                ready, _, _ = select.select([p.stdout], [], [], 1)
                if ready:
                    shown += p.stdout.readline()
            self.assertIn("lact serve: mydesk on 127.0.0.1:", shown)
            port = int(shown.split("127.0.0.1:")[1].split()[0])
            with urllib.request.urlopen("http://127.0.0.1:%d/api/scene" % port, timeout=60) as r:
                scene = json.load(r)
            with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=60) as r:
                page = r.read().decode()
        finally:
            p.terminate()
            _, se = p.communicate(timeout=60)
        self.assertEqual(warnings_in(se), expected)
        # The page's data says the same, and the page shows each as a banner line.
        self.assertEqual(["lact: warning: " + w for w in scene["warnings"]], expected)
        self.assertIn('<div id="warnings"></div>', page)
        self.assertIn('line.textContent = "warning: " + w;', page)
        # Honest texts: sizes HxW as everywhere else; a state is "loaded from FILE", not "encoded in" (the page
        # itself: tests/cli/serve_test.py and tests/browser/serve_page_test.py).
        self.assertIn('$("size").textContent = header.height + "x" + header.width;', page)
        self.assertIn('scene.state ? "loaded from " + scene.state', page)

    def test_a_run_over_an_hour_is_refused_without_a_terminal(self):
        """Estimated over an hour (the fixture model, 5 views at 4096x4096: hours on any CPU) with no terminal to
        ask: refused before any work, with the flag that allows it; a terminal is asked (not tested here)."""
        state = os.path.join(self.tmp.name, "long.safetensors")
        p = subprocess.run([ARGS.lact, "encode", "--model", os.path.join(ARGS.fixture, "model.safetensors"), "--data",
                            os.path.join(ARGS.fixture, "index.json"), "--inputs", "0,1,2,3,4", "--size", "4096x4096",
                            "--threads", "1", "-o", state], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 1, p.stderr)
        last = p.stderr.strip().splitlines()[-1]
        self.assertRegex(last, r"^lact: --max-seconds: encoding 5 views at 4096x4096 is estimated at [\d.]+ h, over an "
                               r"hour: not started \(--max-seconds N allows up to N seconds\)$")
        self.assertFalse(os.path.exists(state))

    def test_max_seconds_help_names_the_hour(self):
        """The help said "default 0: no limit", though work estimated over an hour is refused without a terminal."""
        for command in ("render", "encode"):
            help_text = " ".join(ran_ok(run(command, "--help")).split())
            self.assertRegex(help_text, r"--max-seconds .*default 0: none, but work estimated over an hour asks first")

    def test_inputs_rest_without_targets(self):
        """encode and path take no --targets: `--inputs rest` (the views that are not targets) was offered by their
        help and refused with "give --targets too", a flag they do not have. render still offers and takes it."""
        def inputs_help(command, *argv):
            lines = ran_ok(run(command, *argv, "--help")).splitlines()
            return next(l for l in lines if l.strip().startswith("--inputs"))
        self.assertIn("rest", inputs_help("render"))
        for argv in (["encode", "--model", SHIPPED, "--data", EXAMPLE, "-o", os.path.join(self.tmp.name, "s")],
                     ["path", "orbit", "--data", EXAMPLE, "-o", os.path.join(self.tmp.name, "p.json")]):
            self.assertNotIn("rest", inputs_help(argv[0]))
            rc, so, se = run(*argv, "--inputs", "rest")
            self.assertEqual(rc, 1, se)
            self.assertEqual(se.strip().splitlines(), [
                "lact: --inputs: 'rest' is every view that is not a target, and lact " + argv[0] +
                " takes no --targets: name the input views (e.g. uniform:8) (see lact " + argv[0] + " --help)"])
            self.assertEqual(os.listdir(self.tmp.name), [])
        rc, so, se = run("render", "--model", SHIPPED, "--data", EXAMPLE, "--inputs", "rest", "--targets", "1-63",
                         "--out", os.path.join(self.tmp.name, "r"), "--quiet", "--no-lpips")
        self.assertEqual(rc, 0, se)
        self.assertIn("inputs 0 (--inputs rest)", so)

    def test_info_with_a_model_says_the_size_and_inputs_render_uses(self):
        """`lact info --model M --data D` said the views' own size (270x480 for the desk, which no patch-8 model
        takes) and no inputs, where render picks the model's pixel count at the views' aspect and its input count.
        Checked against what render then does: its report's size and the inputs it prints."""
        so = ran_ok(run("info", "--model", SHIPPED, "--data", self.desk))
        size = re.search(r"(?m)^working size (\d+)x(\d+) \(HxW, the model's 64x64 pixel count", so)
        inputs = re.search(r"(?m)^inputs \(\d+\): ([\d ]+)$", so)
        self.assertTrue(size and inputs, so)
        out = os.path.join(self.tmp.name, "r")
        rendered = ran_ok(run("render", "--model", SHIPPED, "--data", self.desk, "--targets", "1", "--out", out,
                              "--quiet", "--no-lpips"))
        with open(os.path.join(out, "report.json")) as f:
            self.assertEqual(json.load(f)["scenes"][0]["size"], [int(size.group(1)), int(size.group(2))])
        self.assertIn("inputs " + inputs.group(1).replace(" ", ","), rendered)
        bare = ran_ok(run("info", "--data", self.desk, "--inputs", "0"))
        self.assertIn("working size 270x480 (HxW, the views' own size)", bare)
        self.assertIn("give --model to see it", bare)

    def test_a_taken_port_suggests_port_0(self):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        try:
            rc, so, se = run("serve", "--model", SHIPPED, "--data", EXAMPLE, "--inputs", INPUTS, "--bind",
                             "127.0.0.1", "--port", taken.getsockname()[1], "--no-token", "--threads", 2)
        finally:
            taken.close()
        self.assertEqual(rc, 1, se)
        self.assertIn("--port 0 picks a free one", se.strip().splitlines()[-1])


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__.splitlines()[0])
    ARGS.fixture = os.path.abspath(ARGS.fixture)
    unittest.main(argv=[sys.argv[0]] + rest)
