#!/usr/bin/env python3
"""lact's resources (reliability class "resources"): thread counts from the environment and --threads held to
the CPUs this process may use; the memory estimate counting every large buffer (the cover-resize buffer of a
huge --size included) against the least of MemAvailable, ulimit -v, ulimit -d, the memory cgroup and
--memory-limit, before anything is allocated; bench's numeric flags refused when out of range, never replaced.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/resources_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
       --tools tools --data ../shared/data
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unittest

from cli_common import FixtureCase, one_error_line, parse_cli_args

ARGS = None
SANITIZED = os.environ.get("LACT_SANITIZED") == "1"
BAD_THREAD_VALUES = ["100000", "0", "-3", "abc", "", "9" * 30, "4,2", " 1x", "\x1b[31m5", "\u009b31m5"]


def run(*argv, env=None, timeout=120, cpus=None):
    def pin():
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
    full = dict(os.environ)
    full.update(env or {})
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       env=full, preexec_fn=pin, errors="replace")
    return p.returncode, p.stdout, p.stderr


def run_measured(argv, env=None, timeout=60, shell_prefix=None):
    """(rc, stdout, stderr, seconds, peak RSS in MiB) of one lact process; `shell_prefix` runs it under bash
    after those commands (ulimit, as a user's shell sets it)."""
    cmd = [ARGS.lact] + [str(a) for a in argv]
    if shell_prefix:
        cmd = ["bash", "-c", shell_prefix + "; exec " + " ".join(shlex.quote(c) for c in cmd)]
    full = dict(os.environ)
    full.update(env or {})
    start = time.time()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=full)
        while True:  # os.wait4 for the child's own peak RSS; polled so that a hang ends at `timeout`
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - start > timeout:
                p.kill()
                _, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
        rc = p.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.time() - start
        out.seek(0), err.seek(0)
        return (rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"), seconds,
                usage.ru_maxrss / 1024.0)


class Resources(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cpus = len(os.sched_getaffinity(0))
        cls.count = 0

    def folder(self):
        Resources.count += 1
        return os.path.join(self.tmp, "o%d" % Resources.count)

    def expect_error(self, result, names=()):
        return one_error_line(self, result[:3], names)

    def ok(self, result):
        rc, so, se = result[:3]
        self.assertEqual(rc, 0, "rc=%d stdout=%r stderr=%r" % (rc, so[-300:], se[-1500:]))
        self.assertNotIn("runtime error", se)  # UBSan
        return se

    def render_psnr(self, env=None, extra=(), cpus=None):
        out = self.folder()
        se = self.ok(run("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets",
                         "3,4", "--out", out, "--quiet", *extra, env=env, cpus=cpus))
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)["scenes"][0]["psnr"], se

    def device_threads(self, env=None, cpus=None, extra=()):
        rc, so, se = run("info", "--devices", *extra, env=env, cpus=cpus)
        self.assertEqual(rc, 0, se)
        for line in so.splitlines():
            match = re.match(r"cpu +CPU, (\d+) threads?,", line)
            if match:
                return int(match.group(1)), se
        self.fail("no cpu line in %r" % so)

    # OMP_NUM_THREADS / OPENBLAS_NUM_THREADS ------------------------------------------------------------------
    def test_1_thread_environment_capped(self):
        reference, _ = self.render_psnr()
        for value in BAD_THREAD_VALUES:
            with self.subTest(value=value):
                psnr, se = self.render_psnr(env={"OMP_NUM_THREADS": value})
                self.assertAlmostEqual(psnr, reference, places=4)
                notes = [l for l in se.splitlines() if "OMP_NUM_THREADS" in l]
                self.assertEqual(len(notes), 1, se)
                self.assertTrue(notes[0].startswith("lact: note: OMP_NUM_THREADS="), se)
                self.assertNotIn("libgomp", se)  # fixed before libgomp read it
                self.assertFalse(any(ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) <= 0x9f for c in se), repr(se))
                threads, _ = self.device_threads(env={"OMP_NUM_THREADS": value})
                self.assertGreaterEqual(threads, 1)
                self.assertLessEqual(threads, self.cpus)
        psnr, se = self.render_psnr(env={"OPENBLAS_NUM_THREADS": "100000", "GOTO_NUM_THREADS": "-1"})
        self.assertAlmostEqual(psnr, reference, places=4)
        self.assertIn("OPENBLAS_NUM_THREADS", se)
        self.assertIn("GOTO_NUM_THREADS", se)

    def test_2_thread_environment_follows_affinity(self):
        # Pinned to one CPU, OMP_NUM_THREADS=2 runs one thread (with a note); a good value is left alone.
        threads, se = self.device_threads(env={"OMP_NUM_THREADS": "2"}, cpus={sorted(os.sched_getaffinity(0))[0]})
        self.assertEqual(threads, 1)
        self.assertIn("OMP_NUM_THREADS='2'", se)
        threads, se = self.device_threads(env={"OMP_NUM_THREADS": "1"})
        self.assertEqual(threads, 1)
        self.assertEqual(se, "")

    def test_3_threads_flag(self):
        reference, _ = self.render_psnr()
        psnr, se = self.render_psnr(extra=("--threads", "100000"))
        self.assertAlmostEqual(psnr, reference, places=4)
        self.assertIn("lact: note: --threads 100000 is more than the %d CPUs" % self.cpus, se)
        self.expect_error(run("encode", "--model", self.model, "--threads", "-1", "-o", os.path.join(self.tmp, "x")),
                          ["--threads"])

    # Memory -----------------------------------------------------------------------------------------------------
    def render_args(self, size, out=None):
        return ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3",
                "--size", size, "--out", out or self.folder()]

    def test_4_huge_size_refused_before_allocating(self):
        # 32x48 views resized to cover 65536x8 would be 98304x65536 RGBA floats (96 GiB) each.
        out = self.folder()
        for argv in (self.render_args("65536x8", out),
                     ["encode", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--size", "65536x8",
                      "-o", os.path.join(self.tmp, "huge.safetensors")]):
            result = run_measured(argv)
            line = self.expect_error(result, ["--size 65536x8", "resized to 65536x98304", "available"])
            self.assertLess(result[3], 10, line)
            self.assertLess(result[4], 400, "peak RSS %.0f MiB" % result[4])
        self.assertFalse(os.path.exists(out))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "huge.safetensors")))

    def limited(self, prefix, size, names):
        result = run_measured(self.render_args(size), shell_prefix=prefix)
        return self.expect_error(result, names)

    @unittest.skipIf(SANITIZED, "AddressSanitizer reserves terabytes of address space: ulimit -v/-d stop it first")
    def test_5_ulimit_v_and_d(self):
        # 3 GiB of address space (2 GiB of data) hold lact's start-up and a 64x96 render, not an 8192x12288 encode
        # (about 22 GiB); too little to start (OpenBLAS maps 128 MiB a thread at load) is one line, not a hang.
        for prefix, name in (("ulimit -v 3145728", "ulimit -v"), ("ulimit -d 2097152", "ulimit -d")):
            with self.subTest(limit=prefix):
                result = run_measured(self.render_args("8192x12288"), shell_prefix=prefix, timeout=60)
                self.expect_error(result, ["--size 8192x12288", name])
                self.assertLess(result[3], 20)
                self.ok(run_measured(self.render_args("64x96"), shell_prefix=prefix, timeout=60))
        for prefix, name in (("ulimit -v 200000", "ulimit -v"), ("ulimit -d 100000", "ulimit -d")):
            with self.subTest(limit=prefix):
                result = run_measured(["--version"], shell_prefix=prefix, timeout=20)
                self.expect_error(result, [name, "to start"])

    def fake_roots(self, memory_max, current="0", v1=False):
        """LACT_PROC_ROOT and LACT_CGROUP_ROOT with plenty of MemAvailable and a cgroup that has `memory_max`."""
        root = tempfile.mkdtemp(dir=self.tmp)
        proc, cgroup = os.path.join(root, "proc"), os.path.join(root, "cgroup")
        os.makedirs(os.path.join(proc, "self"))
        with open(os.path.join(proc, "meminfo"), "w") as f:
            f.write("MemTotal:       1073741824 kB\nMemAvailable:   1073741824 kB\n")
        if v1:
            with open(os.path.join(proc, "self", "cgroup"), "w") as f:
                f.write("5:cpu:/\n4:memory:/batch/job7\n0::/\n")
            group = os.path.join(cgroup, "memory", "batch", "job7")
            os.makedirs(group)
            with open(os.path.join(group, "memory.stat"), "w") as f:
                f.write("cache 0\nhierarchical_memory_limit %s\ntotal_inactive_file 0\n" % memory_max)
            with open(os.path.join(group, "memory.usage_in_bytes"), "w") as f:
                f.write(current + "\n")
            return {"LACT_PROC_ROOT": proc, "LACT_CGROUP_ROOT": cgroup}
        with open(os.path.join(proc, "self", "cgroup"), "w") as f:
            f.write("0::/batch.slice/job7\n")
        for group, limit in (("batch.slice", memory_max), ("batch.slice/job7", "max")):
            os.makedirs(os.path.join(cgroup, group))
            for name, text in (("memory.max", limit), ("memory.current", current), ("memory.stat", "inactive_file 0\n")):
                with open(os.path.join(cgroup, group, name), "w") as f:
                    f.write(text + "\n")
        return {"LACT_PROC_ROOT": proc, "LACT_CGROUP_ROOT": cgroup}

    def test_6_cgroup_limits(self):
        # 200 MiB in the parent group, 150 MiB of it in use: a 512x768 encode (about 0.4 GiB) does not fit.
        env = self.fake_roots(str(200 << 20), str(150 << 20))
        self.expect_error(run(*self.render_args("512x768"), env=env), ["--size 512x768", "cgroup memory.max of /batch.slice"])
        self.ok(run(*self.render_args("64x96"), env=env))
        env = self.fake_roots(str(200 << 20), str(150 << 20), v1=True)
        self.expect_error(run(*self.render_args("512x768"), env=env), ["--size 512x768", "cgroup memory.limit_in_bytes"])
        # Nothing there, or a FIFO where meminfo should be: no limit known, no hang.
        env = self.fake_roots("max")
        os.remove(os.path.join(env["LACT_PROC_ROOT"], "meminfo"))
        os.mkfifo(os.path.join(env["LACT_PROC_ROOT"], "meminfo"))
        self.ok(run(*self.render_args("64x96"), env=env, timeout=30))

    def test_7_memory_limit_flag(self):
        for value in ("nan", "-1", "inf", "1e400", "-inf", "2e6"):
            with self.subTest(value=value):
                self.expect_error(run(*self.render_args("64x96"), "--memory-limit", value), ["--memory-limit"])
        self.expect_error(run(*self.render_args("512x768"), "--memory-limit", "0.01"), ["--size 512x768", "--memory-limit"])
        self.ok(run(*self.render_args("64x96"), "--memory-limit", "1"))

    # the memory estimate against a measured peak ------------------------------------------------------------------
    def smallest_accepted_limit(self, argv):
        """The smallest --memory-limit (whole MiB) the run's memory check lets through, by bisection: a refused
        run stops before its work with the one line naming the estimate."""
        low, high = 1, 4096
        while high - low > 1:
            middle = (low + high) // 2
            rc, _, se = run(*argv, "--out", self.folder(), "--memory-limit", "%.6f" % (middle / 1024.0))
            if rc != 0:
                self.assertIn("needs about", se)
                low = middle
            else:
                high = middle
        return high

    def test_9_evaluation_peak_within_the_limit_it_passes(self):
        # An evaluation renders its targets in batches of up to a token tile (56 views of 128x128 at once here),
        # after the encode: checked as one view, a limit the check let through was 0.78x the run's peak RSS.
        if SANITIZED:
            self.skipTest("AddressSanitizer's shadow memory is in the RSS")
        index = os.path.join(ARGS.data or "", "gso_sample_index.json")
        if not os.path.isfile(index):
            self.skipTest("no %s" % index)
        argv = ["render", "--model", self.model, "--data", index, "--inputs", "uniform:8", "--targets", "rest",
                "--size", "128", "--threads", "2", "--no-lpips", "--quiet", "--warnings", "off"]
        limit = self.smallest_accepted_limit(argv)
        # 2 MiB above it: what the process holds when it checks varies by about 1 MiB from run to run.
        rc, _, se, _, peak = run_measured(argv + ["--out", self.folder(), "--memory-limit", "%.6f" % ((limit + 2) / 1024.0)])
        self.assertEqual(rc, 0, se[-800:])
        print("evaluation: smallest accepted --memory-limit %d MiB, peak RSS %.1f MiB (%.2fx)" % (limit, peak, limit / peak))
        # The peak allocates the same at every limit (the targets' batch is taken whole); 5% of slack for what
        # the allocator and the libraries vary from run to run.
        self.assertGreaterEqual(limit, 0.95 * peak)

    def test_10_camera_path_peak_within_its_estimate(self):
        # A path renders 8 frames a call, here in two batches of 4 (a token tile of 512x512 views): the CPU backend
        # holds every block a batch's layer allocated, and the call keeps all 8 images. Counted as one batch's
        # buffers and images, the estimate was 0.82x of the peak RSS.
        if SANITIZED:
            self.skipTest("AddressSanitizer's shadow memory is in the RSS")
        path = os.path.join(self.tmp, "path512.json")
        self.ok(run("path", "turntable", "--frames", "8", "--size", "512x512", "-o", path))
        argv = ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--path", path,
                "--threads", "2", "--warnings", "off"]
        rc, _, se, _, peak = run_measured(argv + ["--out", self.folder()], env={"LACT_MEMORY_ESTIMATE": "1"})
        self.assertEqual(rc, 0, se[-800:])
        renders = [int(m) for m in re.findall(r"rendering \d+ views at 512x512 at a time: peak estimate (\d+) MiB", se)]
        self.assertEqual(len(renders), 1, se[-800:])
        print("camera path: render estimate %d MiB, peak RSS %.1f MiB (%.2fx)" % (renders[0], peak, renders[0] / peak))
        self.assertGreaterEqual(renders[0], peak)
        self.assertLessEqual(renders[0], 1.25 * peak)
        # The check holds the run to it: a limit below the estimate is refused before any frame, naming the path.
        self.expect_error(run(*argv, "--out", self.folder(), "--memory-limit", "%.6f" % ((renders[0] - 8) / 1024.0)),
                          ["a frame of 512x512", "rendering", "use a smaller size", "--memory-limit"])

    # bench's numbers --------------------------------------------------------------------------------------------
    def test_8_bench_numbers_refused(self):
        small = ["bench", "--views", "1", "--size", "8", "--repeat", "1", "--warmup", "0", "--models", "lact",
                 "--threads", "1"]
        cases = [(["--layers", "0", "--dim", "64"], "--layers"), (["--layers", "1", "--dim", "-64"], "--dim"),
                 (["--layers", "1", "--dim", "64", "--max-seconds", "nan"], "--max-seconds"),
                 (["--layers", "1", "--dim", "64", "--max-seconds", "-1"], "--max-seconds"),
                 (["--layers", "1", "--dim", "64", "--max-memory-gb", "nan"], "--max-memory-gb"),
                 (["--layers", "1", "--dim", "64", "--max-memory-gb", "-2"], "--max-memory-gb"),
                 (["--layers", "1", "--dim", "64", "--views", "2x"], "--views"),
                 (["--layers", "1", "--dim", "64", "--scaling", "--tflops", "0"], "--tflops"),
                 (["--layers", "1", "--dim", "64", "--scaling", "--tflops", "nan"], "--tflops")]
        for extra, flag in cases:
            with self.subTest(flag=" ".join(extra)):
                self.expect_error(run(*(small + extra), timeout=120), [flag])


def main():
    global ARGS
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
