#!/usr/bin/env python3
"""Progress and estimates (issue 36 item 5): on a terminal, bars for the scenes, the encoded layers and the
rendered views, each with its ETA; none when stderr is not a terminal or with --quiet; a run estimated over a
minute says so in one line before it starts; --max-seconds refuses a run estimated over it, before any work.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/progress_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import os
import re
import subprocess
import sys
import time
import unittest

from cli_common import FixtureCase, one_error_line, parse_cli_args, ran_ok
from cli_common import run_on_a_pty as run_lact_on_a_pty

ARGS = None


def run(*argv, timeout=300):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_on_a_pty(argv, timeout=120):
    """(exit code, everything shown) of lact with stdout and stderr on a pseudo-terminal."""
    rc, shown = run_lact_on_a_pty([ARGS.lact, *argv], timeout)
    return rc, shown.decode("utf-8", "replace")


def bar_counts(shown, what):
    """Every 'done/total' a bar for `what` drew, in order."""
    return [(int(d), int(t)) for d, t in re.findall(r"\] (\d+)/(\d+) %s, \d+ s elapsed, ETA (?:\d+ s|\?)" % what,
                                                    shown)]


class Progress(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.scene = ["--model", cls.model, "--data", cls.index, "--inputs", "0,1,2", "--threads", "1"]

    def test_bars_for_layers_views_and_scenes_on_a_terminal(self):
        out = os.path.join(self.tmp, "pty")
        rc, shown = run_on_a_pty(["render", *self.scene, "--targets", "3,4", "--out", out])
        self.assertEqual(rc, 0, shown)
        # The fixture's model has 2 layers; the 2 targets render in one batch.
        self.assertEqual(bar_counts(shown, "encode layers"), [(0, 2), (1, 2), (2, 2)], shown)
        self.assertEqual(bar_counts(shown, "render views"), [(0, 2), (2, 2)], shown)
        self.assertEqual(bar_counts(shown, "scenes"), [(0, 1), (1, 1)], shown)
        self.assertNotIn("\x1b", shown)  # plain text: \r and spaces redraw the line
        rc, shown = run_on_a_pty(["encode", *self.scene, "-o", os.path.join(self.tmp, "s.safetensors")])
        self.assertEqual(rc, 0, shown)
        self.assertEqual(bar_counts(shown, "encode layers")[-1], (2, 2), shown)

    def test_no_bars_off_a_terminal_or_quiet(self):
        rc, so, se = run("render", *self.scene, "--targets", "3,4", "--out", os.path.join(self.tmp, "pipe"))
        ran_ok((rc, so, se))
        self.assertNotIn("encode layers", se)
        self.assertNotIn("ETA", se)
        rc, shown = run_on_a_pty(["render", *self.scene, "--targets", "3,4", "--quiet", "--out",
                                  os.path.join(self.tmp, "quiet")])
        self.assertEqual(rc, 0, shown)
        self.assertNotIn("ETA", shown)

    def test_max_seconds_refuses_before_any_work(self):
        out = os.path.join(self.tmp, "limited")
        start = time.monotonic()
        line = one_error_line(self, run("render", *self.scene, "--targets", "3,4", "--size", "512x768",
                                        "--max-seconds", "0.001", "--out", out), ["--max-seconds", "estimated at",
                                                                                  "encoding 3 views at 512x768",
                                                                                  "rendering 2 views"])
        self.assertLess(time.monotonic() - start, 30, line)
        self.assertFalse(os.path.exists(os.path.join(out, "report.json")))
        state = os.path.join(self.tmp, "limited.safetensors")
        one_error_line(self, run("encode", *self.scene, "--size", "512x768", "--max-seconds", "0.001", "-o", state),
                       ["--max-seconds", "encoding 3 views at 512x768"])
        self.assertFalse(os.path.exists(state))
        # The same runs under a limit they fit in: the flag refuses by the estimate, not always.
        ran_ok(run("encode", *self.scene, "--max-seconds", "1000", "-o", state))
        ran_ok(run("render", *self.scene, "--targets", "3,4", "--max-seconds", "1000", "--out", out))
        for value in ("nan", "-1", "inf"):
            one_error_line(self, run("render", *self.scene, "--targets", "3", "--max-seconds", value, "--out", out),
                           ["--max-seconds"])

    def test_a_run_over_a_minute_says_so_before_it_starts(self):
        """Encoding 5 views at 2048x3072 takes far over a minute: the line comes first; the run is then stopped."""
        state = os.path.join(self.tmp, "long.safetensors")
        p = subprocess.Popen([ARGS.lact, "encode", "--model", self.model, "--data", self.index, "--inputs",
                              "0,1,2,3,4", "--size", "2048x3072", "--threads", "1", "-o", state],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = p.stderr.readline()
        finally:
            p.kill()
            p.communicate()
        self.assertRegex(line, r"^lact: encoding 5 views at 2048x3072 is estimated at [\d.]+ (min|h) \(\d+ GFLOP at "
                               r"about [\d.]+ GFLOP/s measured here(, [^;]* other running threads? on \d+ CPUs?)?; "
                               r"--max-seconds refuses longer\)$")
        self.assertFalse(os.path.exists(state))


def main():
    global ARGS
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
