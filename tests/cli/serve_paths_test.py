#!/usr/bin/env python3
"""The page's keyframe path editor on the server (issue 54 item 1): POST /api/path/interpolate against `lact path
interpolate` (one interpolation) and against a smoothness computed here by hand, its bounds and bad bodies (one
4xx line each, the server alive), named paths saved under --out/paths (names checked, never replacing a file
unless asked, listed and loaded), and a saved path rendered by `lact render --path` equal to the server's renders
of the same cameras.

  python3 tests/cli/serve_paths_test.py --lact build/app/lact --root .
"""
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from cli_common import ran_ok  # noqa: E402
from serve_common import Server, raw_exchange, rgb, serve_test_args, shipped, write_json  # noqa: E402

ARGS = None
KEYS = "2,4,7"  # neighbouring views: no two keys half a turn apart (where q and -q tie)


def run(*argv, timeout=600):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr



def catmull_rom(a, b, c, d, t):
    """The uniform Catmull-Rom spline between b and c, written out (the textbook matrix form)."""
    return 0.5 * (2 * b + (-a + c) * t + (2 * a - 5 * b + 4 * c - d) * t ** 2 + (-a + 3 * b - 3 * c + d) * t ** 3)


def quaternion(m):
    """Rotation (3x3 of a c2w) -> unit quaternion (w, x, y, z), from the trace (Shepperd's method)."""
    trace = m[0][0] + m[1][1] + m[2][2]
    if trace > 0:
        s = math.sqrt(trace + 1) * 2
        return [s / 4, (m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s]
    i = max(range(3), key=lambda k: m[k][k])
    j, k = (i + 1) % 3, (i + 2) % 3
    s = math.sqrt(1 + m[i][i] - m[j][j] - m[k][k]) * 2
    q = [0.0] * 4
    q[0] = (m[k][j] - m[j][k]) / s
    q[1 + i] = s / 4
    q[1 + j] = (m[j][i] + m[i][j]) / s
    q[1 + k] = (m[k][i] + m[i][k]) / s
    return q


def rotation(q):
    w, x, y, z = q
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def near(a, b):
    return a if sum(p * q for p, q in zip(a, b)) >= 0 else [-v for v in a]


class PathEditorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_serve_paths_")
        model, data, inputs = shipped(ARGS.root)
        cls.state = os.path.join(cls.tmp, "state.safetensors")
        ran_ok(run("encode", "--model", model, "--data", data, "--inputs", inputs, "-o", cls.state))
        cls.out = os.path.join(cls.tmp, "out")
        cls.server = Server(ARGS.lact, "--state", cls.state, "--out", cls.out, "--max-video-frames", 300)
        cls.scene = cls.server.ready()

    @classmethod
    def tearDownClass(cls):
        rc, _, se = cls.server.stop(signal.SIGTERM)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        assert rc == 0 and "terminate called" not in se, se[-3000:]

    def tearDown(self):
        self.assertTrue(self.server.alive(), "".join(self.server.stderr_lines)[-3000:])

    def post(self, target, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        status, _, answer = self.server.request("POST", target, body=data, headers={"Content-Type": "application/json"})
        return status, answer

    def keyframes(self):
        return [self.scene["views"][int(k)]["camera"] for k in KEYS.split(",")]

    def cli_path(self, frames, smoothness=None, name="cli"):
        path = os.path.join(self.tmp, name + ".json")
        extra = [] if smoothness is None else ["--smoothness", smoothness]
        ran_ok(run("path", "interpolate", "--state", self.state, "--keys", KEYS, "--frames", frames, "-o", path, "--force",
               *extra))
        with open(path) as f:
            return json.load(f)["frames"], path

    def interpolate(self, frames, smoothness):
        status, answer = self.post("/api/path/interpolate", {"keyframes": self.keyframes(), "frames": frames,
                                                             "smoothness": smoothness})
        self.assertEqual(status, 200, answer)
        return json.loads(answer)["frames"]

    def test_the_server_interpolates_as_lact_path_does(self):
        for smoothness in (0, 0.5, 1):
            served = self.interpolate(12, smoothness)
            cli, _ = self.cli_path(12, smoothness)
            self.assertEqual(len(served), 12)
            for a, b in zip(served, cli):
                self.assertEqual((a["w"], a["h"]), (b["w"], b["h"]))
                for key in ("fx", "fy", "cx", "cy"):
                    self.assertAlmostEqual(a[key], b[key], delta=1e-4 * abs(b[key]))
                for ra, rb in zip(a["c2w"], b["c2w"]):
                    for x, y in zip(ra, rb):
                        self.assertAlmostEqual(x, y, delta=1e-9)
        # Smoothness 0 is the path lact path interpolate wrote before the flag existed (byte for byte).
        _, without = self.cli_path(12, None, "plain")
        _, zero = self.cli_path(12, 0, "zero")
        with open(without, "rb") as a, open(zero, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_smoothness_against_a_hand_computed_spline(self):
        # 5 frames through 3 keys: frame 1 is halfway between keys 0 and 1, frame 3 halfway between 1 and 2.
        self.assertEqual(catmull_rom(0, 0, 1, 3, 0.5), 0.375)  # by hand: (0.5 + 1 * 0.25 + 0 * 0.125) / 2
        linear, smooth, half = self.interpolate(5, 0), self.interpolate(5, 1), self.interpolate(5, 0.5)
        keys = [linear[0], linear[2], linear[4]]
        pos = lambda c: [c["c2w"][r][3] for r in range(3)]
        rot = lambda c: [row[:3] for row in c["c2w"][:3]]
        for frame, (a, b, c, d) in ((1, (0, 0, 1, 2)), (3, (0, 1, 2, 2))):
            spline = [catmull_rom(*(pos(keys[k])[r] for k in (a, b, c, d)), 0.5) for r in range(3)]
            for r in range(3):
                self.assertAlmostEqual(pos(smooth[frame])[r], spline[r], delta=1e-9)
                self.assertAlmostEqual(pos(half[frame])[r], (spline[r] + pos(linear[frame])[r]) / 2, delta=1e-9)
            qb = quaternion(rot(keys[b]))
            qa, qc = near(quaternion(rot(keys[a])), qb), near(quaternion(rot(keys[c])), qb)
            qd = near(quaternion(rot(keys[d])), qc)
            q = [catmull_rom(qa[i], qb[i], qc[i], qd[i], 0.5) for i in range(4)]
            n = math.sqrt(sum(v * v for v in q))
            expected = rotation([v / n for v in q])
            for r in range(3):
                for col in range(3):
                    self.assertAlmostEqual(rot(smooth[frame])[r][col], expected[r][col], delta=1e-9)
        # The spline is not the straight line (the check above can fail), and it passes through the keys.
        self.assertGreater(max(abs(p - q) for p, q in zip(pos(smooth[1]), pos(linear[1]))), 1e-4)
        for k in (0, 2, 4):
            for ra, rb in zip(smooth[k]["c2w"], linear[k]["c2w"]):
                for x, y in zip(ra, rb):
                    self.assertAlmostEqual(x, y, delta=1e-12)
        rc, _, se = run("path", "interpolate", "--state", self.state, "--keys", KEYS, "--smoothness", 1.5, "-o",
                        os.path.join(self.tmp, "bad.json"))
        self.assertNotEqual(rc, 0)
        self.assertIn("--smoothness", se)

    def assert_refused(self, target, body, status):
        got, answer = self.post(target, body)
        self.assertEqual(got, status, answer[:300])
        text = answer.decode()
        self.assertEqual(text.count("\n"), 1, text)
        self.assertIn("error", json.loads(text))
        return json.loads(text)["error"]

    def test_bad_interpolation_bodies_are_refused_in_one_line(self):
        keys = self.keyframes()
        bad_camera = dict(keys[0], c2w=[["NaN", 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
        odd_size = dict(keys[1], w=60)
        other_size = dict(keys[1], w=keys[1]["w"] * 2, fx=keys[1]["fx"] * 2, cx=keys[1]["cx"] * 2)
        cases = [
            (b"{not json", 400), (b"[1, 2]", 400), ({"frames": 5}, 400), ({"keyframes": [], "frames": 5}, 400),
            ({"keyframes": keys, "frames": 10 ** 6}, 413), ({"keyframes": keys, "frames": 0}, 400),
            ({"keyframes": keys, "frames": "12"}, 400), ({"keyframes": keys, "frames": 5, "smoothness": 2}, 400),
            ({"keyframes": keys, "frames": 5, "smoothness": "x"}, 400),
            ({"keyframes": [keys[0], bad_camera], "frames": 5}, 400),
            ({"keyframes": [keys[0], odd_size], "frames": 5}, 400),
            ({"keyframes": [keys[0], other_size], "frames": 5}, 400),
            ({"keyframes": keys * 34, "frames": 5}, 413),  # 102 keyframes, at most 100
        ]
        for body, status in cases:
            line = self.assert_refused("/api/path/interpolate", body, status)
            print("%d %s" % (status, line[:110]))
        # Over the 1 MiB body bound: refused on its header, before the body is read.
        head = ("POST /api/path/interpolate?token=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" %
                (self.server.token, 2 << 20)).encode()
        status, raw = raw_exchange(self.server.host, self.server.port, head + b"{" * 1000)
        self.assertEqual(status, 413, raw[:300])
        nan = json.dumps({"keyframes": keys, "frames": 5}).replace('"fx": %s' % json.dumps(keys[0]["fx"]), '"fx": NaN', 1)
        self.assertIn("NaN", nan)
        self.assert_refused("/api/path/interpolate", nan.encode(), 400)
        status, answer = self.server.request("GET", "/api/path/interpolate")[::2]
        self.assertEqual(status, 405, answer)
        self.assertEqual(len(self.interpolate(1, 0)), 1)  # one frame: the first key

    def saved(self):
        folder = os.path.join(self.out, "paths")
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []

    def test_paths_saved_listed_loaded_and_never_replaced_unless_asked(self):
        frames = self.interpolate(12, 0.5)
        body = {"format": "lact camera path v1", "frames": frames, "fps": 24, "duration": 0.5, "smoothness": 0.5,
                "keyframes": self.keyframes()}
        status, answer = self.post("/api/paths/orbit-1", body)
        self.assertEqual(status, 201, answer)
        self.assertEqual(json.loads(answer), {"name": "orbit-1", "file": "orbit-1.json", "frames": 12})
        status, _, listing = self.server.request("GET", "/api/paths")
        self.assertEqual(status, 200, listing)
        self.assertIn("orbit-1", json.loads(listing)["paths"])
        self.assertEqual(json.loads(listing)["paths"], [f[:-5] for f in self.saved()])
        before_names = self.saved()
        status, _, loaded = self.server.request("GET", "/api/paths/orbit-1")
        self.assertEqual(status, 200)
        loaded = json.loads(loaded)
        self.assertEqual((loaded["frames"], loaded["keyframes"], loaded["fps"]), (frames, self.keyframes(), 24))
        with open(os.path.join(self.out, "paths", "orbit-1.json"), "rb") as f:
            before = f.read()
        # Taken: refused, the file as it was; asked to replace: replaced.
        line = self.assert_refused("/api/paths/orbit-1", dict(body, frames=frames[:3]), 409)
        self.assertIn("replace", line)
        with open(os.path.join(self.out, "paths", "orbit-1.json"), "rb") as f:
            self.assertEqual(f.read(), before)
        status, answer = self.post("/api/paths/orbit-1?replace=1", dict(body, frames=frames[:3]))
        self.assertEqual((status, json.loads(answer)["frames"]), (201, 3), answer)
        # Bad names and bodies: one line each, nothing written.
        for name in ("..", "../escaped", "%2e%2e", ".hidden", "a/b", "x" * 65, "a..b", "sp%20ace", ""):
            self.assert_refused("/api/paths/" + name, body, 400)
            status, answer = self.server.request("GET", "/api/paths/" + name)[::2]
            self.assertIn(status, (400, 404), answer)
        for bad, status in (({"frames": []}, 400), ({"frames": [dict(frames[0], w=12)]}, 400),
                            ({"frames": frames * 30}, 413), ({"frames": frames, "fps": 0}, 400),
                            ({"frames": frames, "keyframes": "x"}, 400), (b"nope", 400)):
            self.assert_refused("/api/paths/other", bad, status)
        self.assertEqual(self.saved(), before_names)
        self.assertEqual(os.listdir(self.tmp).count("escaped.json"), 0)
        self.assertEqual(self.server.request("GET", "/api/paths/missing")[0], 404)
        # A link planted in the folder is neither listed nor read.
        os.symlink("/etc/passwd", os.path.join(self.out, "paths", "planted.json"))
        self.assertEqual(json.loads(self.server.request("GET", "/api/paths")[2])["paths"], [f[:-5] for f in before_names])
        self.assertEqual(self.server.request("GET", "/api/paths/planted")[0], 404)
        self.assert_refused("/api/paths/planted?replace=1", body, 409)
        os.remove(os.path.join(self.out, "paths", "planted.json"))

    def test_a_path_over_64_kib_is_saved_up_to_max_video_frames(self):
        """Before: Beast's parser held every body to 64 KiB while it read the header, so a path of more than about
        230 frames got 413 "at most 65536 bytes" although the route takes 1 MiB (--max-video-frames unreachable)."""
        frames = self.interpolate(300, 0.5)  # --max-video-frames 300
        body = json.dumps({"format": "lact camera path v1", "frames": frames}).encode()
        self.assertGreater(len(body), 65536)
        status, answer = self.post("/api/paths/long-300", body)
        self.assertEqual(status, 201, answer)
        self.assertEqual(json.loads(answer)["frames"], 300)
        status, _, loaded = self.server.request("GET", "/api/paths/long-300")
        self.assertEqual((status, json.loads(loaded)["frames"]), (200, frames))
        # The bound is the route's: 1 MiB here, 64 KiB for a render, each 413 naming its own number.
        head = ("POST /api/paths/huge?token=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" %
                (self.server.token, (1 << 20) + 1)).encode()
        status, raw = raw_exchange(self.server.host, self.server.port, head + b" " * 1000)
        self.assertEqual(status, 413, raw[:300])
        self.assertIn(b"1048576", raw)
        status, _, answer = self.server.request("POST", "/api/render", body=body)
        self.assertEqual(status, 413, answer)
        self.assertIn(b"65536", answer)
        os.remove(os.path.join(self.out, "paths", "long-300.json"))

    def test_a_replace_that_fails_to_write_keeps_the_old_file(self):
        # A server whose files may not grow past 4 KiB (RLIMIT_FSIZE, SIGXFSZ ignored: write() fails with EFBIG):
        # a 1-frame path fits, a 40-frame one fails mid-write. Before the fix the old file was removed first.
        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

        out = os.path.join(self.tmp, "small_out")
        server = Server(ARGS.lact, "--state", self.state, "--out", out, preexec_fn=small_files)
        try:
            server.ready()
            frames = self.interpolate(40, 0)
            post = lambda target, body: server.request("POST", target, body=json.dumps(body).encode(),
                                                       headers={"Content-Type": "application/json"})[::2]
            status, answer = post("/api/paths/kept", {"frames": frames[:1]})
            self.assertEqual(status, 201, answer)
            file = os.path.join(out, "paths", "kept.json")
            with open(file, "rb") as f:
                before = f.read()
            status, answer = post("/api/paths/kept?replace=1", {"frames": frames})
            self.assertEqual(status, 500, answer)
            self.assertEqual(answer.count(b"\n"), 1, answer)
            self.assertIn(b"kept", answer)
            with open(file, "rb") as f:
                self.assertEqual(f.read(), before)
            self.assertEqual(sorted(os.listdir(os.path.join(out, "paths"))), ["kept.json"])  # no temporary left
            status, answer = post("/api/paths/kept?replace=1", {"frames": frames[1:2]})  # one that fits: replaced
            self.assertEqual(status, 201, answer)
            with open(file) as f:
                self.assertEqual(json.load(f)["frames"], frames[1:2])
            self.assertTrue(server.alive())
        finally:
            rc, _, se = server.stop(signal.SIGTERM)
        self.assertEqual(rc, 0, se[-3000:])

    def test_a_saved_path_renders_with_lact_render_as_the_server_renders_it(self):
        frames = self.interpolate(6, 0.75)
        status, answer = self.post("/api/paths/render-me", {"frames": frames, "keyframes": self.keyframes(),
                                                            "smoothness": 0.75, "fps": 30})
        self.assertEqual(status, 201, answer)
        status, _, text = self.server.request("GET", "/api/paths/render-me")
        path = write_json(os.path.join(self.tmp, "downloaded.json"), json.loads(text))
        out = os.path.join(self.tmp, "rendered")
        ran_ok(run("render", "--state", self.state, "--path", path, "--out", out))
        images = []
        for i, camera in enumerate(frames):
            status, _, png = self.server.render(camera)
            self.assertEqual(status, 200, png[:200])
            with open(os.path.join(out, "frame_%04d.png" % i), "rb") as f:
                self.assertEqual(rgb(f.read()), rgb(png), "frame %d" % i)
            images.append(rgb(png))
        self.assertEqual(len(set(images)), len(images))  # six different views (the comparison is not of constants)
        print("ok: a saved 6-frame path rendered by lact render --path equals the server's renders, pixel for pixel")


if __name__ == "__main__":
    ARGS, rest = serve_test_args(__doc__.splitlines()[0])
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
