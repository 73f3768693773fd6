#!/usr/bin/env python3
"""lact's outputs under signals, `ulimit -f`, racing writers and links (issue 35, items 3, 4, 8, 9 and 14).

Each case runs real lact processes. The promise: a signal (SIGTERM, SIGINT, SIGHUP) ends lact by that signal and
leaves no temporary; a write past the shell's `ulimit -f` is one "disk full?" line and exit 1, with the folder
left empty; of two runs writing one new name exactly one wins and the other says "appeared while this run
worked"; a second job into a busy --out is refused; a report.json lact did not write is kept without --force;
an output named through a link is written to the link's target (the link stays), /dev and /proc entries are
refused, and a link planted inside --out is refused with nothing written outside it.

Some cases need lact to pause inside a state's write: a small LD_PRELOAD library (compiled here with cc) makes
fsync of lact's temporaries sleep. Those cases are skipped under LACT_SANITIZED=1 (the sanitizer runtime must
be the first library loaded), where the racing cases run as two plain concurrent processes instead.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/signals_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import unittest

from cli_common import FixtureCase, alive, one_error_line, parse_cli_args, ran_ok

ARGS = None
SANITIZED = os.environ.get("LACT_SANITIZED") == "1"

SLOW_FSYNC_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fsync of a file whose name holds ".tmp-" (lact's temporaries) first writes that name to $SLOW_FSYNC_MARK and
   then sleeps $SLOW_FSYNC_SECONDS: the test then knows the temporary is on disk and lact is inside its write. */
int fsync(int fd) {
  static int (*real_fsync)(int);
  if (!real_fsync) real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n > 0) {
    target[n] = 0;
    const char* mark = getenv("SLOW_FSYNC_MARK");
    if (strstr(target, ".tmp-") && mark) {
      char partial[4200];
      snprintf(partial, sizeof partial, "%s.part", mark);
      const int m = open(partial, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (m >= 0) {
        (void)!write(m, target, (size_t)n);
        close(m);
        rename(partial, mark);
      }
      const char* s = getenv("SLOW_FSYNC_SECONDS");
      usleep((useconds_t)((s ? atof(s) : 3.0) * 1e6));
    }
  }
  return real_fsync(fd);
}
"""


THREAD_AT_LOAD_C = r"""
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A library that starts a thread when it is loaded, before lact's main (as the pthread build of OpenBLAS starts
   its worker pool): the thread writes its id to $THREAD_AT_LOAD_TID and waits; the loading goes on once it is
   written. */
static sem_t written;

static void* idle(void* unused) {
  const char* path = getenv("THREAD_AT_LOAD_TID");
  if (path) {
    char partial[4200];
    snprintf(partial, sizeof partial, "%s.part", path);
    FILE* f = fopen(partial, "w");
    if (f) {
      fprintf(f, "%ld", (long)syscall(SYS_gettid));
      fclose(f);
      rename(partial, path);
    }
  }
  sem_post(&written);
  for (;;) pause();
  return unused;
}

__attribute__((constructor)) static void start_thread_at_load(void) {
  pthread_t thread;
  sem_init(&written, 0, 0);
  if (pthread_create(&thread, NULL, idle, NULL) == 0) {
    pthread_detach(thread);
    while (sem_wait(&written) != 0) {
    }
  }
}
"""
OPENBLAS_PTHREAD = "/usr/lib/x86_64-linux-gnu/openblas-pthread"  # Debian's other OpenBLAS build (libopenblas0-pthread)
TERMINATING_MASK = sum(1 << (s - 1) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))


def default_signals():
    """The child starts with the signals a user's shell leaves it: default actions (a test runner may ignore some)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGXFSZ, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)


def run(*argv, timeout=120, env=None, stdout=None):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], stdout=stdout or subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout, env=env, errors="replace",
                       preexec_fn=default_signals)
    return p.returncode, p.stdout or "", p.stderr


def start(*argv, env=None):
    return subprocess.Popen([ARGS.lact] + [str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, errors="replace", preexec_fn=default_signals)


def finish(process, timeout=120):
    so, se = process.communicate(timeout=timeout)
    return process.returncode, so, se


def wait_for(predicate, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def state_inputs(path):
    """The input views recorded in a state file's metadata (to tell two runs' results apart)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        meta = json.loads(f.read(n)).get("__metadata__", {})
    return json.dumps(meta, sort_keys=True)


class Reliability(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.state = os.path.join(cls.tmp, "s.safetensors")
        cls.ok(run("encode", "--model", cls.model, "--data", cls.scene, "--inputs", "0,1,2", "-o", cls.state))
        cls.path4 = os.path.join(cls.tmp, "p4.json")
        cls.ok(run("path", "turntable", "--frames", "4", "--size", "32x48", "-o", cls.path4))
        cls.shim = cls.preload_library("slow_fsync", SLOW_FSYNC_C, "-ldl")
        cls.thread_at_load = cls.preload_library("thread_at_load", THREAD_AT_LOAD_C, "-lpthread")

    @classmethod
    def preload_library(cls, name, source_text, link):
        """A library to LD_PRELOAD, compiled from `source_text`; None under the sanitizers (their runtime must come
        first) or where no C compiler is."""
        if SANITIZED or not shutil.which("cc"):
            return None
        source = os.path.join(cls.tmp, name + ".c")
        with open(source, "w") as f:
            f.write(source_text)
        library = os.path.join(cls.tmp, name + ".so")
        ok = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", library, source, link]).returncode == 0
        return library if ok else None

    @staticmethod
    def ok(result):
        return ran_ok(result)

    def fresh(self, name):
        folder = os.path.join(self.tmp, name)
        os.makedirs(folder)
        return folder

    def expect_error(self, result, names=()):
        return one_error_line(self, result, names)

    def slow_env(self, mark, seconds):
        env = dict(os.environ, LD_PRELOAD=self.shim, SLOW_FSYNC_MARK=mark, SLOW_FSYNC_SECONDS=str(seconds))
        return env

    def encode_args(self, output, inputs="0,1,2"):
        return ["encode", "--model", self.model, "--data", self.scene, "--inputs", inputs, "-o", output]

    # Item 3 -----------------------------------------------------------------------------------------------------
    def test_file_size_limit_from_the_shell(self):
        """`ulimit -f` set by the user's shell, SIGXFSZ at its default: one "disk full?" line, nothing left."""
        folder = self.fresh("ulimit")
        target = os.path.join(folder, "s.safetensors")
        self.assertGreater(os.path.getsize(self.state), 50 * 1024)  # the limit below cuts the write
        p = subprocess.run(["bash", "-c", 'ulimit -f 50; exec "$0" "$@"', ARGS.lact] + self.encode_args(target),
                           capture_output=True, text=True, timeout=120, errors="replace", preexec_fn=default_signals)
        line = self.expect_error((p.returncode, p.stdout, p.stderr), [target, "disk full?"])
        self.assertIn("File too large", line)
        self.assertEqual(os.listdir(folder), [])

    def test_file_size_limit_during_render_leaves_no_folder(self):
        """A render whose first image cannot be written: --out and the scene folder it made are gone (an empty
        OUT/SCENE stayed); a folder that was there before stays, with the user's files."""
        argv = ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4"]
        for existed in (False, True):
            out = os.path.join(self.tmp, "ulimit_render_%d" % existed)
            if existed:
                os.makedirs(os.path.join(out, "keep"))
            p = subprocess.run(["bash", "-c", 'ulimit -f 1; exec "$0" "$@"', ARGS.lact] + argv + ["--out", out],
                               capture_output=True, text=True, timeout=120, errors="replace",
                               preexec_fn=default_signals)
            self.expect_error((p.returncode, p.stdout, p.stderr), [out, "disk full?"])
            if existed:
                self.assertEqual(os.listdir(out), ["keep"])
            else:
                self.assertFalse(os.path.exists(out), os.listdir(out) if os.path.isdir(out) else out)

    # Item 4 -----------------------------------------------------------------------------------------------------
    def test_signal_during_encode_write(self):
        """SIGTERM, SIGINT, SIGHUP while the state's temporary is on disk: it is removed, lact ends by the signal."""
        if not self.shim:
            self.skipTest("needs cc and LD_PRELOAD (not under the sanitizers: their runtime must load first)")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal=sig.name):
                folder = self.fresh("signal_" + sig.name)
                mark = os.path.join(self.tmp, "mark_" + sig.name)
                p = start(*self.encode_args(os.path.join(folder, "s.safetensors")), env=self.slow_env(mark, 30))
                wait_for(lambda: os.path.exists(mark) or p.poll() is not None, 60, "the state's write")
                temporaries = os.listdir(folder)
                self.assertEqual(len(temporaries), 1, temporaries)
                self.assertTrue(temporaries[0].startswith(".s.safetensors.tmp-"), temporaries)
                p.send_signal(sig)
                rc, so, se = finish(p, 30)
                self.assertEqual(rc, -sig, se)
                self.assertEqual(os.listdir(folder), [])
        # The shell sees 128 + the signal, as without the handler.
        folder = self.fresh("signal_shell")
        mark = os.path.join(self.tmp, "mark_shell")
        script = '"$@" & pid=$!; while [ ! -e "$MARK" ]; do sleep 0.02; done; kill -TERM $pid; wait $pid; echo rc=$?'
        env = self.slow_env(mark, 30)
        env["MARK"] = mark
        p = subprocess.run(["bash", "-c", script, "bash", ARGS.lact] + self.encode_args(
            os.path.join(folder, "s.safetensors")), capture_output=True, text=True, timeout=120, env=env,
            preexec_fn=default_signals)
        self.assertIn("rc=143", p.stdout, p.stderr)
        self.assertEqual(os.listdir(folder), [])

    def thread_masks(self, name, env=None):
        """Starts a long render, and once its first frame is written (its threads, OpenMP's worker among them, are
        all there) reads the kernel's own view of each thread: {tid: (SigBlk, State)}, and the files it mapped;
        then SIGINT ends it."""
        path = os.path.join(self.tmp, "idle_thread_path.json")
        if not os.path.exists(path):
            self.ok(run("path", "turntable", "--frames", "400", "--size", "128x128", "-o", path))
        out = self.fresh(name)
        p = start("render", "--state", self.state, "--path", path, "--out", out, "--threads", "2", "--quiet", env=env)
        tasks = "/proc/%d/task" % p.pid
        wait_for(lambda: os.listdir(out) or p.poll() is not None, 60, "the render's first frame")
        self.assertIsNone(p.poll(), "the render ended before its threads could be looked at")
        masks = {}
        for tid in os.listdir(tasks):
            try:
                with open(os.path.join(tasks, tid, "status")) as f:
                    status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
            except OSError:
                continue  # a thread that ended meanwhile
            masks[int(tid)] = (int(status["SigBlk"], 16), status["State"])
        with open("/proc/%d/maps" % p.pid) as f:
            mapped = f.read()
        p.send_signal(signal.SIGINT)
        rc, _, se = finish(p, 60)
        self.assertEqual(rc, -signal.SIGINT, se)
        return p.pid, masks, mapped

    def check_one_receiving_thread(self, pid, masks):
        self.assertGreaterEqual(len(masks), 2)
        receiving = [(tid, state) for tid, (blocked, state) in masks.items()
                     if blocked & TERMINATING_MASK != TERMINATING_MASK]
        self.assertEqual(len(receiving), 1, receiving)
        self.assertNotEqual(receiving[0][0], pid, "the main thread computes")
        self.assertTrue(receiving[0][1].startswith("S"), receiving)  # asleep, waiting for signals

    def test_signals_reach_only_an_idle_thread(self):
        """SIGINT, SIGTERM and SIGHUP are blocked in every thread of a render but one that computes nothing: a
        handler on a computing thread ran on whatever stack it had, and oneDNN's f32 GEMM points rsp at a heap
        workspace (ASan: "heap-buffer-overflow WRITE of size 152" in the handler). The kernel's own view, the
        SigBlk mask of each thread in /proc, is the reference."""
        pid, masks, _ = self.thread_masks("idle_thread")
        self.check_one_receiving_thread(pid, masks)

    def test_threads_started_before_main_block_the_signals(self):
        """A thread a library starts when it is loaded, before main (the pthread build of OpenBLAS starts its
        workers so), blocks the three signals too: lact blocks them before any library's constructor runs. Before,
        such a thread did not block them, and a signal could run the handler there."""
        ran = 0
        if self.thread_at_load:
            with self.subTest(library="a thread started at load"):
                ran += 1
                tid_file = os.path.join(self.tmp, "thread_at_load.tid")
                env = dict(os.environ, LD_PRELOAD=self.thread_at_load, THREAD_AT_LOAD_TID=tid_file)
                pid, masks, _ = self.thread_masks("thread_at_load", env)
                with open(tid_file) as f:
                    tid = int(f.read())
                self.assertIn(tid, masks)
                self.assertEqual(masks[tid][0] & TERMINATING_MASK, TERMINATING_MASK, masks)
                self.check_one_receiving_thread(pid, masks)
        if os.path.isdir(OPENBLAS_PTHREAD):
            with self.subTest(library="the pthread build of OpenBLAS"):
                ran += 1
                env = dict(os.environ, LD_LIBRARY_PATH=OPENBLAS_PTHREAD)
                pid, masks, mapped = self.thread_masks("openblas_pthread", env)
                self.assertIn(OPENBLAS_PTHREAD + "/libopenblas", mapped)  # that build, not lact's usual one
                self.check_one_receiving_thread(pid, masks)
        if not ran:
            self.skipTest("needs cc (not under the sanitizers) or Debian's pthread build of OpenBLAS")

    def test_kill_9_during_model_convert(self):
        """kill -9 of `lact model convert`: the converter dies with lact and leaves no file under a visible name.
        The stand-in converter (LACT_PYTHON) writes part of its output, records its pid, then works for 600 s.
        Before, it went on after lact's death and its output stayed as OUT.converting-PID.safetensors."""
        folder = self.fresh("convert_kill")
        python = os.path.join(self.tmp, "slow_python")
        with open(python, "w") as f:
            f.write('#!/bin/sh\nfor a; do out="$a"; done\nprintf partial > "$out"\necho $$ > "$PID_FILE.part"\n'
                    'mv "$PID_FILE.part" "$PID_FILE"\nexec sleep 600\n')
        os.chmod(python, 0o755)
        pid_file = os.path.join(self.tmp, "converter.pid")
        env = dict(os.environ, LACT_PYTHON=python, PID_FILE=pid_file)
        p = start("model", "convert", os.path.join(self.fx, "model.pt"), "-o", os.path.join(folder, "m.safetensors"),
                  env=env)
        wait_for(lambda: os.path.exists(pid_file) or p.poll() is not None, 60, "the converter")
        with open(pid_file) as f:
            converter = int(f.read())
        p.kill()
        self.assertEqual(finish(p, 30)[0], -signal.SIGKILL)
        try:
            wait_for(lambda: not alive(converter), 5, "the converter's death")
        finally:
            if alive(converter):
                os.kill(converter, signal.SIGKILL)
        self.assertEqual([n for n in os.listdir(folder) if not n.startswith(".")], [])

    # Item 8 -----------------------------------------------------------------------------------------------------
    def race(self, folder, first, second, target):
        """Runs `first` and `second` (argument lists) to one new name; the first pauses inside its write while
        the second runs (with the shim), or both run at once. Returns the two results."""
        if self.shim:
            mark = os.path.join(self.tmp, os.path.basename(folder) + "_mark")
            a = start(*first, env=self.slow_env(mark, 2))
            wait_for(lambda: os.path.exists(mark) or a.poll() is not None, 60, "the first run's write")
            b = run(*second)
            return finish(a), b
        a, b = start(*first), start(*second)
        return finish(a), finish(b)

    def check_one_winner(self, results, target, folder):
        winners = [r for r in results if r[0] == 0]
        losers = [r for r in results if r[0] != 0]
        self.assertEqual(len(winners), 1, results)
        line = self.expect_error(losers[0], [target])
        if self.shim:  # the loser was inside its write when the winner committed
            self.assertIn("appeared while this run worked", line)
        else:  # two plain processes: the loser saw the file before or after its work
            self.assertTrue("appeared while this run worked" in line or "exists" in line, line)
        self.assertEqual(os.listdir(folder), [os.path.basename(target)])
        return results.index(winners[0])

    def test_racing_writers_to_one_new_name(self):
        """Two `encode -o` (and two `path -o`) to one new name: exactly one wins, nothing of the other is kept."""
        folder = self.fresh("race_encode")
        target = os.path.join(folder, "s.safetensors")
        results = self.race(folder, self.encode_args(target, "0,1,2"), self.encode_args(target, "0,1,3"), target)
        winner = self.check_one_winner(list(results), target, folder)
        reference = os.path.join(self.tmp, "race_reference.safetensors")
        self.ok(run(*self.encode_args(reference, ["0,1,2", "0,1,3"][winner])))
        self.assertEqual(state_inputs(target), state_inputs(reference))

        folder = self.fresh("race_path")
        target = os.path.join(folder, "p.json")
        first = ["path", "turntable", "--frames", "5", "--size", "32x48", "-o", target]
        second = ["path", "turntable", "--frames", "7", "--size", "32x48", "-o", target]
        winner = self.check_one_winner(list(self.race(folder, first, second, target)), target, folder)
        with open(target) as f:
            self.assertEqual(len(json.load(f)["frames"]), [5, 7][winner])

    def long_path(self, frames):
        path = os.path.join(self.tmp, "p%d.json" % frames)
        if not os.path.exists(path):
            self.ok(run("path", "turntable", "--frames", frames, "--size", "32x48", "-o", path))
        return path

    def test_two_jobs_into_one_out_folder(self):
        """A second job into an --out that a running job holds is refused; once the first ends, it may write. The
        ranks of one MPI job share their --out."""
        out = os.path.join(self.tmp, "two_jobs")
        long_path = self.long_path(40)
        a = start("render", "--state", self.state, "--path", long_path, "--out", out, "--quiet")
        wait_for(lambda: os.path.exists(os.path.join(out, "frame_0000.png")) or a.poll() is not None, 60,
                 "the first job's first frame")
        a.send_signal(signal.SIGSTOP)  # held still (its lock with it) while the second job tries
        try:
            line = self.expect_error(run("render", "--state", self.state, "--path", self.path4, "--out", out),
                                     ["--out", out, "in use by another lact run"])
        finally:
            a.send_signal(signal.SIGCONT)
        self.ok(finish(a))
        self.assertEqual(len([f for f in os.listdir(out) if f.endswith(".png")]), 40, line)
        self.ok(run("render", "--state", self.state, "--path", self.path4, "--out", out))
        mpirun = shutil.which("mpirun")
        if mpirun and not SANITIZED:  # MPI runs in the distributed label, outside the sanitizer stage
            out = os.path.join(self.tmp, "one_job_two_ranks")
            p = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", ARGS.lact, "render",
                                "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4",
                                "--out", out, "--distributed", "mpi", "--quiet"], capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(sorted(os.listdir(os.path.join(out, "scene"))), ["3.png", "4.png"])

    def test_users_report_json_is_kept(self):
        """A report.json / report.csv in --out that lact did not write needs --force; lact's own is replaced."""
        for name, text in (("report.json", '{"mine": true}\n'), ("report.csv", "my,own,table\n")):
            with self.subTest(name=name):
                out = self.fresh("users_" + name)
                with open(os.path.join(out, name), "w") as f:
                    f.write(text)
                argv = ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3",
                        "--out", out]
                self.expect_error(run(*argv), [name, "--force"])
                self.assertEqual(os.listdir(out), [name])
                with open(os.path.join(out, name)) as f:
                    self.assertEqual(f.read(), text)
                self.ok(run(*argv, "--force"))
                self.ok(run(*argv))  # now lact's own: replaced freely
                with open(os.path.join(out, "report.json")) as f:
                    self.assertTrue(json.load(f)["format"].startswith("lact report"))

    # Item 14 ----------------------------------------------------------------------------------------------------
    def test_scene_named_like_the_report(self):
        """A scene named report.json gets a folder that does not collide with lact's own report."""
        root = self.fresh("report_named")
        with open(os.path.join(self.scene, "opencv_cameras.json")) as f:
            frames = json.load(f)
        for fr in frames:
            fr["file_path"] = os.path.join(self.scene, fr["file_path"])
        cameras = os.path.join(root, "s", "opencv_cameras.json")
        os.makedirs(os.path.dirname(cameras))
        with open(cameras, "w") as f:
            json.dump({"scene_name": "report.json", "frames": frames}, f)
        index = os.path.join(root, "index.json")
        with open(index, "w") as f:
            json.dump([cameras], f)
        out = os.path.join(root, "out")
        self.ok(run("render", "--model", self.model, "--data", index, "--inputs", "0,1,2", "--targets", "3",
                    "--out", out))
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        self.assertEqual(report["scenes"][0]["name"], "report.json")
        folder = report["scenes"][0]["folder"]
        self.assertNotIn(folder, ("report.json", "report.csv"))
        self.assertTrue(os.path.isfile(os.path.join(out, folder, "3.png")), os.listdir(out))

    def test_scene_named_like_a_rank_record(self):
        """Scenes named like a rank's progress record ("report-rank-R-of-N.json", any case) get folders that do not
        collide with the records a run across ranks keeps in --out beside report.json."""
        root = self.fresh("rank_record_named")
        with open(os.path.join(self.scene, "opencv_cameras.json")) as f:
            frames = json.load(f)
        for fr in frames:
            fr["file_path"] = os.path.join(self.scene, fr["file_path"])
        names = ["report-rank-0-of-2.json", "Report-Rank-1-of-2.JSON"]
        cameras = []
        for i, name in enumerate(names):
            cameras.append(os.path.join(root, "s%d" % i, "opencv_cameras.json"))
            os.makedirs(os.path.dirname(cameras[-1]))
            with open(cameras[-1], "w") as f:
                json.dump({"scene_name": name, "frames": frames}, f)
        index = os.path.join(root, "index.json")
        with open(index, "w") as f:
            json.dump(cameras, f)
        out = os.path.join(root, "out")
        self.ok(run("render", "--model", self.model, "--data", index, "--inputs", "0,1,2", "--targets", "3",
                    "--out", out))
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        self.assertEqual([s["name"] for s in report["scenes"]], names)
        for scene in report["scenes"]:
            folder = scene["folder"]
            self.assertIsNone(re.fullmatch(r"report-rank-\d+-of-\d+\.json", folder, re.I), folder)
            self.assertTrue(os.path.isfile(os.path.join(out, folder, "3.png")), os.listdir(out))

    # Item 9 -----------------------------------------------------------------------------------------------------
    def test_links(self):
        """A link named as an output is written through to its target; /proc and /dev entries are refused; a link
        planted inside --out is refused with nothing written outside it."""
        folder = self.fresh("links")
        # A link to this process's stdout (a regular file here): /proc entries are not files lact writes.
        stdout_file = os.path.join(self.tmp, "links_stdout.txt")
        to_proc = os.path.join(folder, "to_stdout")
        os.symlink("/proc/self/fd/1", to_proc)
        with open(stdout_file, "w") as so:
            self.expect_error(run(*self.encode_args(to_proc), "--force", stdout=so), [to_proc, "/proc"])
        self.assertTrue(os.path.islink(to_proc))
        self.assertEqual(os.path.getsize(stdout_file), 0)
        # The machine's /dev/stdout is never replaced by a regular file (checked only after the /proc case
        # passed: a lact that replaces links would damage this machine here).
        if os.path.islink("/dev/stdout"):
            with open(stdout_file, "w") as so:
                self.expect_error(run(*self.encode_args("/dev/stdout"), "--force", stdout=so), ["/dev/stdout"])
            self.assertTrue(os.path.islink("/dev/stdout"))
            self.expect_error(run("path", "turntable", "--frames", "3", "-o", "/dev/null", "--force"), ["/dev/null"])
        # An --out under /dev is refused before any work.
        dev_out = "/dev/shm/lact_reliability_%d" % os.getpid()
        self.expect_error(run("render", "--state", self.state, "--path", self.path4, "--out", dev_out),
                          ["--out", dev_out, "/dev"])
        self.assertFalse(os.path.exists(dev_out))
        # A link to a file: written through, and stays a link.
        target = os.path.join(folder, "real.safetensors")
        link = os.path.join(folder, "link.safetensors")
        os.symlink("real.safetensors", link)
        self.ok(run(*self.encode_args(link)))
        self.assertTrue(os.path.islink(link))
        self.assertEqual(state_inputs(target), state_inputs(self.state))
        self.expect_error(run(*self.encode_args(link, "0,1,3")), [link, "exists", "--force"])
        self.ok(run(*self.encode_args(link, "0,1,3"), "--force"))
        self.assertTrue(os.path.islink(link))
        self.assertEqual(sorted(os.listdir(folder)), ["link.safetensors", "real.safetensors", "to_stdout"])

    def test_dangling_out_link_and_removed_working_folder(self):
        """Named for what they are (issue 48): a --out link to a missing folder ("File exists" before), and a
        relative output from a working folder that was removed ("( is not a folder)" before)."""
        folder = self.fresh("dangling")
        link = os.path.join(folder, "out")
        os.symlink(os.path.join(folder, "missing"), link)
        argv = ["render", "--state", self.state, "--path", self.path4, "--out"]
        self.expect_error(run(*argv, link), [link, "missing", "does not exist"])
        self.assertFalse(os.path.exists(os.path.join(folder, "missing")))
        # Two links naming each other: "is a link to b, which does not exist" before, though b was there.
        loop_a, loop_b = os.path.join(folder, "loop_a"), os.path.join(folder, "loop_b")
        os.symlink(loop_b, loop_a)
        os.symlink(loop_a, loop_b)
        line = self.expect_error(run(*argv, loop_a), [loop_a, "cannot be followed", "levels of symbolic links"])
        self.assertNotIn("does not exist", line)
        gone = self.fresh("gone")
        for output in (["--out", "o"], ["-o", "s.safetensors"]):
            p = subprocess.Popen(["/bin/sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", gone,
                                  ARGS.lact] + (argv[:-1] + output if output[0] == "--out" else
                                               self.encode_args(output[1])),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
            so, se = p.communicate(timeout=120)
            self.expect_error((p.returncode, so, se), ["working folder no longer exists"])
            os.makedirs(gone)

    def test_link_planted_inside_out(self):
        """A scene folder (or a frame) inside --out that is a link elsewhere: refused, nothing written there."""
        argv = ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4"]
        first = os.path.join(self.tmp, "planted_first")
        self.ok(run(*argv, "--out", first))
        with open(os.path.join(first, "report.json")) as f:
            scene_folder = json.load(f)["scenes"][0]["folder"]
        outside = self.fresh("planted_outside")
        out = self.fresh("planted_out")
        os.symlink(outside, os.path.join(out, scene_folder))
        self.expect_error(run(*argv, "--out", out), [os.path.join(out, scene_folder), "link"])
        self.assertEqual(os.listdir(outside), [])
        self.assertEqual(os.listdir(out), [scene_folder])
        # A frame's name planted as a link to a file outside: the file is untouched, the link refused.
        victim = os.path.join(outside, "victim.png")
        with open(victim, "wb") as f:
            f.write(b"keep me")
        out = self.fresh("planted_frame")
        os.symlink(victim, os.path.join(out, "frame_0000.png"))
        self.expect_error(run("render", "--state", self.state, "--path", self.path4, "--out", out),
                          ["frame_0000.png", "link"])
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"keep me")
        self.assertTrue(os.path.islink(os.path.join(out, "frame_0000.png")))


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
