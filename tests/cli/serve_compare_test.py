#!/usr/bin/env python3
"""Two models or two states side by side in `lact serve` (issue 54 item 3): --compare-model M2 encodes the same
inputs with a second model (here the shipped model with every weight times 0.9, a model lact cannot tell by its
shapes), --compare-state S2 opens a second state of the scene. Every camera a stream sends comes back as two frames,
"side": "a" and "b"; side b's PNG of a test view equals `lact render` of that model pixel for pixel and its PSNR
and SSIM equal that render's report. Refusals (a missing or bad file, both flags, a state of another working size)
are one line each, before the port is bound.

  PYTHONPATH=tests/common python3 tests/cli/serve_compare_test.py --lact build/app/lact --root .
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from cli_common import CRASH_MARKERS, ran_ok, scaled_model  # noqa: E402
from serve_common import Server, camera_path, rgb, serve_test_args, shipped, write_json  # noqa: E402
from ws_client import WebSocket, frame_parts  # noqa: E402

ARGS = None
TESTS = "2,10"


def run(*argv, timeout=600):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr





def both_frames(ws, timeout=60):
    """The next frame of side a and of side b: {side: (header, images)}."""
    frames, deadline = {}, time.time() + timeout
    while len(frames) < 2 and time.time() < deadline:
        message = ws.recv()
        if isinstance(message, bytes):
            header, images = frame_parts(message)
            frames[header["side"]] = (header, images)
        elif json.loads(message)["type"] == "error":
            raise AssertionError(message)
    assert set(frames) == {"a", "b"}, frames.keys()
    return frames


class CompareTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_serve_compare_")
        cls.model, cls.data, cls.inputs = shipped(ARGS.root)
        cls.other = os.path.join(cls.tmp, "other.safetensors")
        scaled_model(cls.model, cls.other, 0.9)
        cls.state = os.path.join(cls.tmp, "state.safetensors")
        ran_ok(run("encode", "--model", cls.model, "--data", cls.data, "--inputs", cls.inputs, "-o", cls.state))
        cls.servers = []

    @classmethod
    def tearDownClass(cls):
        try:
            for server in cls.servers:
                rc, _, se = server.stop(signal.SIGTERM)
                assert rc == 0 and not any(m in se for m in CRASH_MARKERS), se[-3000:]
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, *flags):
        server = Server(ARGS.lact, "--state", self.state, "--targets", TESTS, "--out", os.path.join(self.tmp, "out"),
                        *flags)
        self.servers.append(server)
        server.ready()
        deadline = time.time() + 120
        while server.scene()["sides"][1]["status"] == "encoding" and time.time() < deadline:
            time.sleep(0.1)
        scene = server.scene()
        self.assertEqual(scene["sides"][1]["status"], "ready", scene["sides"])
        return server, scene

    def reference(self, name, camera, *model_flags):
        """`lact render` of the other model: the PNG of `camera` (--path) and the report's view 2."""
        path = write_json(os.path.join(self.tmp, name + ".json"), camera_path([camera]))
        ran_ok(run("render", *model_flags, "--path", path, "--out", os.path.join(self.tmp, name)))
        ran_ok(run("render", *model_flags, "--targets", 2, "--out", os.path.join(self.tmp, name + "_report")))
        with open(os.path.join(self.tmp, name, "frame_0000.png"), "rb") as f:
            png = f.read()
        with open(os.path.join(self.tmp, name + "_report", "report.json")) as f:
            view = [v for v in json.load(f)["scenes"][0]["views"] if v["index"] == 2][0]
        return png, view

    def check_sides(self, server, scene, expected_png, expected_view):
        camera = scene["views"][2]["camera"]
        ws = WebSocket(server.stream_url())
        try:
            ws.send_json({"type": "camera", "camera": camera, "view": 2})
            frames = both_frames(ws)
            (a, a_images), (b, b_images) = frames["a"], frames["b"]
            self.assertEqual((b["format"], b["view"], a["view"]), ("png", 2, 2))
            self.assertEqual(rgb(b_images["render"]), rgb(expected_png), "side b differs from lact render --path")
            self.assertAlmostEqual(b["psnr"], expected_view["psnr"], places=4)
            self.assertAlmostEqual(b["ssim"], expected_view["ssim"], places=4)
            self.assertGreater(b["render_ms"], 0)
            # Side a is the served state's own render: other pixels, another PSNR.
            self.assertNotEqual(rgb(a_images["render"])[2], rgb(b_images["render"])[2])
            self.assertGreater(abs(a["psnr"] - b["psnr"]), 1e-3)
            # The API renders either side: ?side=b is side b's frame, ?side=a (the default) side a's.
            for side, images in (("b", b_images), ("a", a_images)):
                status, kind, body = server.render(camera, "?side=" + side)
                self.assertEqual((status, kind), (200, "image/png"), body[:300])
                self.assertEqual(rgb(body), rgb(images["render"]), side)
            self.assertEqual(server.render(camera, "?side=c")[0], 400)
            # A moving camera: two JPEG frames, one per side, neither measured.
            moved = json.loads(json.dumps(camera))
            moved["c2w"][0][3] += 0.01
            ws.send_json({"type": "camera", "camera": moved, "view": 2, "moving": True})
            for side, (header, images) in both_frames(ws).items():
                self.assertEqual((header["format"], header["view"]), ("jpeg", -1), side)
                self.assertNotIn("psnr", header)
        finally:
            ws.close()
        return rgb(b_images["render"])

    def test_a_second_model_and_a_second_state_render_as_lact_render(self):
        server, scene = self.serve("--compare-model", self.other)
        self.assertEqual([s["side"] for s in scene["sides"]], ["a", "b"])
        self.assertEqual((scene["sides"][0]["model"], scene["sides"][0]["state"]),
                         ("lact_tiny_obj64.safetensors", "state.safetensors"))
        self.assertEqual((scene["sides"][1]["model"], scene["sides"][1]["state"]), ("other.safetensors", None))
        self.assertNotIn(self.tmp, json.dumps(scene))  # names, never this machine's paths
        camera = scene["views"][2]["camera"]
        png, view = self.reference("other", camera, "--model", self.other, "--data", self.data, "--inputs",
                                   self.inputs)
        by_model = self.check_sides(server, scene, png, view)
        # The same model's state, encoded by lact encode: the same side b, now named by its state.
        state2 = os.path.join(self.tmp, "other_state.safetensors")
        ran_ok(run("encode", "--model", self.other, "--data", self.data, "--inputs", self.inputs, "-o", state2))
        server, scene = self.serve("--compare-state", state2)
        self.assertEqual((scene["sides"][1]["model"], scene["sides"][1]["state"]),
                         ("other.safetensors", "other_state.safetensors"))
        png2, view2 = self.reference("other_state", camera, "--state", state2)
        self.assertEqual(by_model, self.check_sides(server, scene, png2, view2))

    def test_a_server_without_a_comparison_sends_no_side(self):
        server, = [Server(ARGS.lact, "--state", self.state, "--targets", TESTS, "--out", os.path.join(self.tmp, "o"))]
        self.servers.append(server)
        scene = server.ready()
        self.assertNotIn("sides", scene)
        status, _, body = server.render(scene["views"][2]["camera"], "?side=b")
        self.assertEqual(status, 404, body)
        self.assertIn("--compare-model", json.loads(body)["error"])
        ws = WebSocket(server.stream_url())
        try:
            ws.send_json({"type": "camera", "camera": scene["views"][2]["camera"], "view": 2})
            while True:
                message = ws.recv()
                if isinstance(message, bytes):
                    self.assertNotIn("side", frame_parts(message)[0])
                    break
        finally:
            ws.close()

    def refused(self, flags, names):
        """One line (warnings of side b's own scene aside) naming `names`, exit 1, and no port bound."""
        rc, so, se = run("serve", "--port", 0, "--state", self.state, *flags, timeout=120)
        lines = [l for l in se.strip().splitlines() if not l.startswith("lact: warning:")]
        self.assertEqual((rc, len(lines)), (1, 1), se)
        self.assertTrue(lines[0].startswith("lact: "), se)
        self.assertNotIn("open http", so)  # refused before the port was bound
        for name in names:
            self.assertIn(name, lines[0])
        for marker in CRASH_MARKERS:
            self.assertNotIn(marker, se)
        print(lines[0])

    def test_refusals_are_one_line_before_the_port_is_bound(self):
        missing = os.path.join(self.tmp, "missing.safetensors")
        junk = write_json(os.path.join(self.tmp, "junk.safetensors"), {"not": "a model"})
        small = os.path.join(self.tmp, "small.safetensors")
        ran_ok(run("encode", "--model", self.model, "--data", self.data, "--inputs", self.inputs, "--size", "32x32",
               "-o", small))
        self.refused(["--compare-model", missing], ["--compare-model", "missing.safetensors", "no such file"])
        self.refused(["--compare-state", missing], ["--compare-state", "missing.safetensors"])
        self.refused(["--compare-model", junk], ["--compare-model", "junk.safetensors"])
        self.refused(["--compare-state", junk], ["--compare-state", "junk.safetensors"])
        self.refused(["--compare-model", self.other, "--compare-state", self.state], ["not both"])
        self.refused(["--compare-state", small], ["--compare-state", "32x32", "64x64"])
        self.refused(["--compare-state", self.tmp], ["--compare-state", "not a regular file"])


if __name__ == "__main__":
    ARGS, rest = serve_test_args(__doc__.splitlines()[0])
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
