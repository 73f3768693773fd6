#!/usr/bin/env python3
"""`lact render --video` against missing, broken and hostile ffmpegs (reliability round 3, class "video").

The promise: the container and ffmpeg/ffprobe are checked before any frame is rendered; every wait on ffmpeg is
bounded (LACT_VIDEO_STALL_SECONDS); a video reaches its final name only when ffmpeg exited 0 and ffprobe counts
exactly the frames given; otherwise one `lact: ` line naming the video, exit 1, no file under the final name and
no temporary left. ffmpeg's own output never reaches the terminal. Two runs writing one new name: one wins, the
other says "appeared while this run worked". A signal during --video stops ffmpeg and removes the temporary.

The fake ffmpegs are shell scripts in a folder put first on PATH; ffprobe is the real one.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/video_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny --tools tools
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from cli_common import FixtureCase, alive, one_error_line, parse_cli_args

ARGS = None
FFMPEG = shutil.which("ffmpeg")
FFPROBE = shutil.which("ffprobe")

# The fake ffmpegs. Each finds its output file in its last argument ("file:NAME").
OUTPUT = 'for a in "$@"; do out="$a"; done\nout="${out#file:}"\n'
FAKES = {
    "eight_bytes": OUTPUT + "/bin/cat > /dev/null\nprintf 12345678 > \"$out\"\nexit 0\n",
    "writes_nothing": "/bin/cat > /dev/null\nexit 0\n",
    # ffmpeg's failure on a full disk: the frames are taken, the file is cut short, and it exits 0.
    "full_disk": OUTPUT + "%s \"$@\" || exit 1\nsize=$(/usr/bin/stat -c %%%%s \"$out\")\n"
                 "/usr/bin/truncate -s $((size * %%s / 100)) \"$out\"\n"
                 "echo 'av_interleaved_write_frame(): No space left on device' >&2\nexit 0\n" % FFMPEG,
    # It opens its output and then never reads a frame.
    "never_reads": OUTPUT + "echo $$ > \"$PIDS/ffmpeg\"\nprintf header > \"$out\"\nexec /bin/sleep 600\n",
    # It takes every frame and then never ends; the sleeper is its child, not itself.
    "never_ends": "/bin/cat > /dev/null\n/bin/sleep 600 &\necho $! > \"$PIDS/ffmpeg\"\nwait\n",
    "escapes_and_fails": "/bin/cat > /dev/null\nprintf '\\033]0;pwned\\007\\033[2J\\033[31mred\\n' >&2\nexit 1\n",
    "escapes_and_works": "printf '\\033]0;pwned\\007\\033[2J' >&2\nexec %s \"$@\"\n" % FFMPEG,
    # Two runs meet here before either writes a frame, so both passed the up-front checks.
    "barrier": "touch \"$PIDS/started.$$\"\ni=0\nwhile [ $(ls \"$PIDS\" | grep -c started) -lt 2 ] && "
               "[ $i -lt 400 ]; do /bin/sleep 0.05; i=$((i+1)); done\nexec %s \"$@\"\n" % FFMPEG,
}


def frames_in(video):
    p = subprocess.run([FFPROBE, "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", video], capture_output=True, text=True)
    return int(p.stdout.strip())


@unittest.skipUnless(FFMPEG and FFPROBE, "ffmpeg and ffprobe are not installed (scripts/setup.sh installs them)")
class Video(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.state = os.path.join(cls.tmp, "s.safetensors")
        cls.paths = {}
        rc, so, se = cls.lact(["encode", "--model", cls.model, "--data", cls.scene, "--inputs",
                               "0,1,2", "-o", cls.state])
        assert rc == 0, so + se
        for frames in (4, 6, 24):
            cls.paths[frames] = os.path.join(cls.tmp, "p%d.json" % frames)
            rc, so, se = cls.lact(["path", "turntable", "--frames", frames, "--size", "32x48", "-o",
                                   cls.paths[frames]])
            assert rc == 0, so + se

    def setUp(self):
        self.case = tempfile.mkdtemp(dir=self.tmp)
        self.pids = os.path.join(self.case, "pids")
        os.makedirs(self.pids)
        self.bin = os.path.join(self.case, "bin")
        os.makedirs(self.bin)
        self.folder = os.path.join(self.case, "videos")  # the video's folder: nothing else is ever in it
        os.makedirs(self.folder)
        self.out = os.path.join(self.case, "out")

    def tearDown(self):  # no fake may outlive its test, whatever lact did
        for name in os.listdir(self.pids):
            if name == "ffmpeg":
                with open(os.path.join(self.pids, name)) as f:
                    pid = int(f.read() or 0)
                if pid and alive(pid):
                    os.kill(pid, signal.SIGKILL)

    @staticmethod
    def lact(argv, env=None, timeout=120):
        p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                           env=env, errors="replace")
        return p.returncode, p.stdout, p.stderr

    def env(self, fake=None, tools=("ffmpeg", "ffprobe"), system_path=True, **extra):
        """An environment whose PATH finds `fake` as ffmpeg (else the real one) and only the `tools` named."""
        shutil.rmtree(self.bin)
        os.makedirs(self.bin)
        for tool in tools:
            target = os.path.join(self.bin, tool)
            if tool == "ffmpeg" and fake:
                with open(target, "w") as f:
                    f.write("#!/bin/sh\n" + fake)
                os.chmod(target, 0o755)
            else:
                os.symlink(FFMPEG if tool == "ffmpeg" else FFPROBE, target)
        env = dict(os.environ, PIDS=self.pids, PATH=self.bin + (":/usr/bin:/bin" if system_path else ""))
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def render(self, video, env, frames=4, out=None, extra=(), timeout=120):
        return self.lact(["render", "--state", self.state, "--path", self.paths[frames], "--out", out or self.out,
                          "--video", video, "--quiet"] + list(extra), env=env, timeout=timeout)

    def expect_error(self, result, names=()):
        return one_error_line(self, result, names, forbidden=("\x1b", "\x07"))  # ffmpeg's own text

    def assert_nothing_left(self, video):
        """No file under the final name and no temporary beside it."""
        self.assertEqual(os.listdir(os.path.dirname(video)), [])

    def assert_not_rendered(self):
        frames = [f for f in os.listdir(self.out)] if os.path.isdir(self.out) else []
        self.assertEqual(frames, [], "frames were rendered before the --video check")

    def test_real_ffmpeg_video_has_every_frame(self):
        env = self.env()
        for name in ("v.mp4", "v.mkv", "v.MOV"):
            video = os.path.join(self.folder, name)
            rc, so, se = self.render(video, env, out=os.path.join(self.case, "o-" + name))
            self.assertEqual(rc, 0, so + se)
            self.assertEqual(frames_in(video), 4, name)
        self.assertEqual(sorted(os.listdir(self.folder)), ["v.MOV", "v.mkv", "v.mp4"])  # no temporary left

    def test_existing_video_kept_or_replaced_through_its_link(self):
        env = self.env()
        target = os.path.join(self.folder, "real.mp4")
        link = os.path.join(self.folder, "link.mp4")
        self.assertEqual(self.render(target, env, frames=6)[0], 0)
        os.symlink("real.mp4", link)
        self.expect_error(self.render(link, env), ["--video", "--force"])
        self.assertEqual(frames_in(target), 6)
        rc, so, se = self.render(link, env, extra=["--force"])
        self.assertEqual(rc, 0, so + se)
        self.assertTrue(os.path.islink(link))  # written through the link, never replacing it
        self.assertEqual(frames_in(target), 4)
        self.assertEqual(sorted(os.listdir(self.folder)), ["link.mp4", "real.mp4"])

    def test_unknown_container_refused_before_rendering(self):
        env = self.env()
        for name in ("v.txt", "v.png", "v.webm", "v", "v.mp4.gif"):
            video = os.path.join(self.folder, name)
            self.expect_error(self.render(video, env), ["--video", name])
            self.assert_not_rendered()
            self.assert_nothing_left(video)

    def test_missing_ffmpeg_or_ffprobe_refused_before_rendering(self):
        video = os.path.join(self.folder, "v.mp4")
        self.expect_error(self.render(video, self.env(tools=("ffprobe",), system_path=False)), ["--video", "ffmpeg"])
        self.assert_not_rendered()
        self.expect_error(self.render(video, self.env(tools=("ffmpeg",), system_path=False)), ["--video", "ffprobe"])
        self.assert_not_rendered()
        self.assert_nothing_left(video)

    def test_bad_stall_timeout_refused_before_rendering(self):
        video = os.path.join(self.folder, "v.mp4")
        for value in ("abc", "nan", "0", "-5", "1e9", ""):
            self.expect_error(self.render(video, self.env(LACT_VIDEO_STALL_SECONDS=value)),
                              ["LACT_VIDEO_STALL_SECONDS"])
            self.assert_not_rendered()

    def test_ffmpeg_that_writes_eight_bytes_or_nothing(self):
        for fake in ("eight_bytes", "writes_nothing"):
            video = os.path.join(self.folder, "v.mp4")
            self.expect_error(self.render(video, self.env(FAKES[fake])), [video, "not a readable video"])
            self.assert_nothing_left(video)

    def test_full_disk_while_ffmpeg_writes_the_end(self):
        # .mp4 cut short is unreadable; .mkv cut short still plays, with fewer frames than were given.
        for name, keep, expected in (("v.mp4", 70, "not a readable video"), ("v.mkv", 50, "frames given")):
            video = os.path.join(self.folder, name)
            self.expect_error(self.render(video, self.env(FAKES["full_disk"] % keep), frames=24), [video, expected])
            self.assert_nothing_left(video)

    def test_full_disk_from_the_shell_ulimit(self):
        # As a user's shell sets it: the limit (6 KiB) holds for lact and for the ffmpeg it starts. Each frame's
        # PNG (under 5 KB) fits; the video of 96 frames (about 8 KB) does not, and ffmpeg exits 0 with a part.
        video = os.path.join(self.folder, "v.mkv")
        path = os.path.join(self.case, "long.json")
        self.assertEqual(self.lact(["path", "turntable", "--frames", 96, "--size", "32x48", "-o", path])[0], 0)
        argv = [ARGS.lact, "render", "--state", self.state, "--path", path, "--out", self.out, "--video", video,
                "--quiet"]
        p = subprocess.run(["bash", "-c", 'ulimit -f 6 && exec "$@"', "bash"] + argv, capture_output=True,
                           text=True, timeout=120, env=self.env(), errors="replace")
        self.expect_error((p.returncode, p.stdout, p.stderr), [video])
        self.assert_nothing_left(video)

    def test_ffmpeg_that_cannot_start_leaves_no_temporary(self):
        # An executable ffmpeg that is neither ELF nor a script: execve fails (ENOEXEC) after the temporary was
        # made; it stayed, empty, beside the video (the same as `ulimit -n 8`, where the pipe cannot be made).
        env = self.env()
        fake = os.path.join(self.bin, "ffmpeg")
        os.unlink(fake)
        with open(fake, "wb") as f:
            f.write(b"\x00\x01 not a program")
        os.chmod(fake, 0o755)
        video = os.path.join(self.folder, "v.mp4")
        self.expect_error(self.render(video, env), ["ffmpeg", "cannot start"])
        self.assert_nothing_left(video)

    def test_ffmpeg_that_never_reads_is_stopped(self):
        video = os.path.join(self.folder, "v.mp4")
        start = time.monotonic()
        result = self.render(video, self.env(FAKES["never_reads"], LACT_VIDEO_STALL_SECONDS=1), frames=24, timeout=60)
        self.expect_error(result, [video, "took no frame data for 1 s"])
        self.assertLess(time.monotonic() - start, 30)
        self.assert_nothing_left(video)
        with open(os.path.join(self.pids, "ffmpeg")) as f:
            self.assertFalse(alive(int(f.read())), "ffmpeg was left running")

    def test_ffmpeg_that_never_ends_is_stopped_with_its_children(self):
        video = os.path.join(self.folder, "v.mp4")
        result = self.render(video, self.env(FAKES["never_ends"], LACT_VIDEO_STALL_SECONDS=1), timeout=60)
        self.expect_error(result, [video, "did not finish within 1 s"])
        self.assert_nothing_left(video)
        time.sleep(0.2)  # the killed sleeper's new parent reaps it
        with open(os.path.join(self.pids, "ffmpeg")) as f:
            self.assertFalse(alive(int(f.read())), "ffmpeg's child was left running")

    def test_ffmpeg_output_never_reaches_the_terminal(self):
        video = os.path.join(self.folder, "v.mp4")
        line = self.expect_error(self.render(video, self.env(FAKES["escapes_and_fails"])), [video, "exit status 1"])
        self.assertIn("red", line)  # its last line, made inert
        rc, so, se = self.render(video, self.env(FAKES["escapes_and_works"]))
        self.assertEqual(rc, 0, so + se)
        self.assertNotIn("\x1b", so + se)
        self.assertEqual(frames_in(video), 4)

    def test_racing_runs_to_one_name(self):
        video = os.path.join(self.folder, "v.mp4")
        env = self.env(FAKES["barrier"])
        runs = [subprocess.Popen([ARGS.lact, "render", "--state", self.state, "--path", self.paths[n], "--out",
                                  os.path.join(self.case, "o%d" % n), "--video", video, "--quiet"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in (4, 6)]
        results = [p.communicate(timeout=120) for p in runs]
        results = [(p.returncode,) + r for p, r in zip(runs, results)]
        codes = sorted(r[0] for r in results)
        self.assertEqual(codes, [0, 1], results)
        winner = [n for n, r in zip((4, 6), results) if r[0] == 0][0]
        loser = [r for r in results if r[0] == 1][0]
        self.expect_error(loser, [video, "appeared while this run worked"])
        self.assertEqual(frames_in(video), winner)
        self.assertEqual(os.listdir(self.folder), ["v.mp4"])

    def test_signals_stop_ffmpeg_and_remove_the_temporary(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            video = os.path.join(self.folder, "v.mp4")
            env = self.env(FAKES["never_reads"])
            p = subprocess.Popen([ARGS.lact, "render", "--state", self.state, "--path", self.paths[24], "--out",
                                  self.out, "--video", video, "--quiet"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            pidfile = os.path.join(self.pids, "ffmpeg")
            deadline = time.monotonic() + 60
            while not (os.path.exists(pidfile) and os.path.getsize(pidfile) > 0) and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3)  # its output file written, lact rendering or waiting on the pipe
            p.send_signal(sig)
            p.communicate(timeout=60)
            self.assertEqual(p.returncode, -sig, sig)
            with open(pidfile) as f:
                pid = int(f.read())
            self.assertFalse(alive(pid), "ffmpeg was left running after %s" % sig.name)
            self.assert_nothing_left(video)
            os.unlink(pidfile)


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
