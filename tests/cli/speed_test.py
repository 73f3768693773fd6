#!/usr/bin/env python3
"""The speed users see, as far as a pass/fail test can hold it (issue 49; timings themselves are `lact bench`'s):
the time estimate costs no model work and is kept per machine in $XDG_CACHE_HOME/lact (its arithmetic:
test_time_estimate; against the encode it precedes: bench/time_estimate.py, a benchmark); libgomp's spinning is
bounded from the start unless the user set it.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/speed_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

from cli_common import parse_cli_args, ran_ok

ARGS = None


def run(*argv, env=None, timeout=300):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       env=env)
    return p.returncode, p.stdout, p.stderr


class TimeEstimate(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="lact_speed_")
        self.tmp = self._tmp.name
        fx = os.path.abspath(ARGS.fixture)
        self.scene = ["--model", os.path.join(fx, "model.safetensors"), "--data", os.path.join(fx, "index.json"),
                      "--inputs", "0,1,2", "--threads", "1", "--warnings", "off"]
        # A home of its own too: nothing may reach the user's ~/.cache.
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.tmp, "cache"), HOME=self.tmp,
                        LACT_TIME_ESTIMATE="1")

    def tearDown(self):
        self._tmp.cleanup()

    def encode(self, size):
        state = os.path.join(self.tmp, "state.safetensors")
        rc, so, se = run("encode", *self.scene, "--size", size, "-o", state, "--force", env=self.env)
        ran_ok((rc, so, se))
        estimate = re.search(r"time estimate: encoding 3 views at %s: ([\d.]+) s .*; (\d+) shapes timed now, "
                             r"rates in (.*)\)$" % size, se, re.M)
        took = re.search(r"^encoded 3 views .* in ([\d.]+) s", so, re.M)
        self.assertTrue(estimate and took, so + se)
        return float(estimate.group(1)), int(estimate.group(2)), estimate.group(3), float(took.group(1))

    def test_rates_are_measured_once_and_kept_in_the_cache_folder(self):
        _, timed, path, _ = self.encode("256x256")
        self.assertGreater(timed, 0)
        self.assertEqual(path, os.path.join(self.tmp, "cache", "lact", "rates.txt"))
        with open(path) as f:
            self.assertEqual(f.readline(), "lact rates 1\n")
        with open(path) as f:
            measured_busy = all("\tbusy " in line for line in f.read().splitlines()[1:])
        _, timed_again, _, _ = self.encode("256x256")
        # The next process reads them; rates measured while other work held the CPUs are measured again once the
        # machine is quiet (and then kept for good).
        if not measured_busy:
            self.assertEqual(timed_again, 0)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cache", "state.safetensors"])  # nothing under ~/.cache

    def test_the_print_switches_are_on_only_at_1(self):
        """LACT_TIME_ESTIMATE / LACT_MEMORY_ESTIMATE: 0 and empty are off (a small encode prints no estimate), a value
        that is not 0 or 1 is refused in one line naming the variable, before any work (no output file)."""
        state = os.path.join(self.tmp, "state.safetensors")
        for value in ("0", ""):
            env = dict(self.env, LACT_TIME_ESTIMATE=value, LACT_MEMORY_ESTIMATE=value)
            rc, so, se = run("encode", *self.scene, "--size", "32x48", "-o", state, "--force", env=env)
            ran_ok((rc, so, se))
            self.assertNotIn("time estimate", se)
            self.assertNotIn("peak estimate", se)
        rc, so, se = run("encode", *self.scene, "--size", "32x48", "-o", state, "--force", env=self.env)
        ran_ok((rc, so, se))
        self.assertIn("time estimate", se)  # 1: on, as the tests above use it
        os.remove(state)
        for name in ("LACT_TIME_ESTIMATE", "LACT_MEMORY_ESTIMATE"):
            env = dict(self.env, **{name: "yes"})
            rc, so, se = run("encode", *self.scene, "--size", "32x48", "-o", state, env=env)
            self.assertNotEqual(rc, 0)
            want = "lact: %s: 'yes' is not 0 or 1 (unset or 0: off, 1: on)" % name
            self.assertEqual(se.strip().splitlines(), [want])
            self.assertFalse(os.path.exists(state))

    def test_a_corrupt_or_unwritable_cache_is_no_error(self):
        os.makedirs(os.path.join(self.tmp, "cache", "lact"))
        path = os.path.join(self.tmp, "cache", "lact", "rates.txt")
        with open(path, "wb") as f:
            f.write(b"\x00\xffnot a cache\n")
        _, timed, _, _ = self.encode("256x256")
        self.assertGreater(timed, 0)
        with open(path) as f:
            self.assertEqual(f.readline(), "lact rates 1\n")  # replaced
        os.remove(path)
        with open(os.path.join(self.tmp, "file"), "w") as f:
            f.write("a file where the cache folder would be")
        self.env["XDG_CACHE_HOME"] = os.path.join(self.tmp, "file")
        _, timed, _, _ = self.encode("256x256")
        self.assertGreater(timed, 0)
        _, timed, _, _ = self.encode("256x256")
        self.assertGreater(timed, 0)  # not kept, measured again, and no error


class OpenMpWaiting(unittest.TestCase):
    """libgomp prints the spin count it read at start-up (OMP_DISPLAY_ENV=verbose): bounded unless set."""

    def spin_count(self, **variables):
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        env.update(variables, OMP_DISPLAY_ENV="verbose")
        rc, so, se = run("--version", env=env)
        self.assertEqual(rc, 0, se)
        found = re.search(r"GOMP_SPINCOUNT = '(\d+)'", se)
        self.assertTrue(found, se)
        return int(found.group(1))

    def test_spinning_is_bounded_by_default(self):
        self.assertEqual(self.spin_count(), 1000)  # libgomp's own default: 300000

    def test_the_users_choice_is_kept(self):
        self.assertEqual(self.spin_count(GOMP_SPINCOUNT="77"), 77)
        self.assertNotEqual(self.spin_count(OMP_WAIT_POLICY="active"), 1000)
        self.assertEqual(self.spin_count(OMP_WAIT_POLICY="passive"), 0)

    def test_the_lent_variable_is_given_back(self):
        """The slot lent to GOMP_SPINCOUNT ("_" first) holds its own value again before main: a child lact starts
        (here a fake COLMAP that writes its environment down) sees the environment lact was given."""
        with tempfile.TemporaryDirectory(prefix="lact_spin_") as tmp:
            photos = os.path.join(tmp, "photos")
            os.makedirs(photos)
            fixture_scene = os.path.join(os.path.abspath(ARGS.fixture), "scene", "images")
            for name in sorted(os.listdir(fixture_scene))[:3]:
                with open(os.path.join(fixture_scene, name), "rb") as src, open(os.path.join(photos, name), "wb") as dst:
                    dst.write(src.read())
            colmap, seen = os.path.join(tmp, "colmap"), os.path.join(tmp, "child_env.txt")
            with open(colmap, "w") as f:
                f.write("#!/bin/sh\nenv > '%s'\nexit 1\n" % seen)
            os.chmod(colmap, 0o755)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "_": "/lent/and/given/back",
                   "OMP_DISPLAY_ENV": "verbose"}
            rc, so, se = run("import", photos, "-o", os.path.join(tmp, "out"), "--colmap", colmap, env=env)
            self.assertEqual(rc, 1, se)
            self.assertIn("GOMP_SPINCOUNT = '1000'", se)  # libgomp read the lent slot
            with open(seen) as f:
                child = f.read().splitlines()
            self.assertIn("_=/lent/and/given/back", child)
            self.assertFalse([line for line in child if line.startswith("GOMP_SPINCOUNT=")], child)
        # An environment with nothing to lend keeps libgomp's default, and lact runs.
        rc, so, se = run("--version", env={"OMP_DISPLAY_ENV": "verbose"})
        self.assertEqual(rc, 0, se)
        self.assertIn("GOMP_SPINCOUNT = '300000'", se)


def main():
    global ARGS
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
