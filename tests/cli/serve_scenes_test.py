#!/usr/bin/env python3
"""`lact serve` of many scenes (docs/guide/serve.md: many scenes) as a real process: a --data index of three
scenes, and several --state files, through one model. A scene is encoded on first use; the states are kept within
--cache-memory (the least recently used released), saved under --out/states and read back, never encoded again;
each scene's frames equal `lact render` of that scene's state; a bad scene choice is one line, the stream goes on.

  PYTHONPATH=tests/common:. python3 tests/cli/serve_scenes_test.py --lact build/app/lact --root .
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
from serve_common import (  # noqa: E402
    Server, camera_path, decoded_frames, psnr, rgb, run_page_harness, scene_index, serve_test_args, shipped,
    write_json)
from ws_client import WebSocket, frame_parts  # noqa: E402

ARGS = None
NAMES = ("toy_a", "toy_b", "toy_c")


def run(*argv, timeout=600):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def next_message(ws, kind, timeout=120):
    """The next message of `kind` ("frame", or a text message's type), skipping the others."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        message = ws.recv()
        if isinstance(message, bytes):
            if kind == "frame":
                return frame_parts(message)
            continue
        value = json.loads(message)
        if value["type"] == kind:
            return value
    raise AssertionError("no %s message in %d s" % (kind, timeout))


def stop_cleanly(server):
    rc, so, se = server.stop(signal.SIGTERM)
    for bad in CRASH_MARKERS:
        assert bad not in se, se[-3000:]
    assert rc == 0, (rc, so, se[-3000:])
    return se


class Scenes:
    """What the tests ask a many-scene server: its list, a scene's render (waiting while it is encoded or read)."""

    def __init__(self, server):
        self.server = server

    def list(self):
        status, _, body = self.server.request("GET", "/api/scenes")
        assert status == 200, (status, body)
        return json.loads(body)

    def answer(self, scene, camera, timeout=300):
        """(status, body) of POST /api/render of `camera` in `scene`, asked again while it answers 503 (the scene's
        state is being made)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, _, data = self.server.render(dict(camera, scene=scene))
            if status != 503:
                return status, data
            time.sleep(0.2)
        raise AssertionError("scene %d was not ready in %d s" % (scene, timeout))

    def render(self, scene, camera):
        status, data = self.answer(scene, camera)
        assert status == 200, (status, data)
        return data


class ManyScenesTest(unittest.TestCase):
    """Three scenes of a --data index, a bound between one and two states: each use of another scene releases one."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_serve_scenes_")
        cls.model, _, cls.inputs = shipped(ARGS.root)
        cls.index = scene_index(ARGS.root, cls.tmp, NAMES)
        cls.out = os.path.join(cls.tmp, "out")
        # One state's bytes, from a state file of the same model (its tensors, a small header beside them).
        probe = os.path.join(cls.tmp, "probe.safetensors")
        ran_ok(run("encode", "--model", cls.model, "--data", cls.index, "--scene", "toy_a", "--inputs", cls.inputs,
                   "-o", probe))
        cls.bound_gb = 1.5 * os.path.getsize(probe) / 2 ** 30
        cls.flags = ("--model", cls.model, "--data", cls.index, "--inputs", cls.inputs, "--targets", "2,10",
                     "--no-token", "--out", cls.out, "--cache-memory", "%.9f" % cls.bound_gb)
        cls.server = Server(ARGS.lact, *cls.flags)
        cls.scenes = Scenes(cls.server)
        cls.camera = cls.server.ready()["views"][2]["camera"]  # a test view of every scene (the same cameras)

    @classmethod
    def tearDownClass(cls):
        stop_cleanly(cls.server)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.server.alive(), "".join(self.server.stderr_lines)[-3000:])

    def state_file(self, index):
        return os.path.join(self.out, "states", "%d_%s.lact" % (index, NAMES[index]))

    def rendered_from_state(self, state, name):
        """`lact render --state STATE --path` of the test camera: its RGB."""
        path = write_json(os.path.join(self.tmp, name + ".json"), camera_path([self.camera]))
        out = os.path.join(self.tmp, name)
        ran_ok(run("render", "--state", state, "--path", path, "--out", out, "--force"))
        with open(os.path.join(out, "frame_0000.png"), "rb") as f:
            return rgb(f.read())

    def test_1_the_scenes_are_listed_and_the_first_is_encoded_at_start(self):
        listed = self.scenes.list()
        self.assertEqual([s["name"] for s in listed["scenes"]], list(NAMES))
        self.assertEqual([s["index"] for s in listed["scenes"]], [0, 1, 2])
        for s in listed["scenes"]:
            self.assertEqual((s["views"], s["size"]), (64, "64x64"))
        self.assertEqual(listed["scenes"][0]["status"], "ready")
        self.assertEqual([s["status"] for s in listed["scenes"][1:]], ["idle", "idle"])
        self.assertAlmostEqual(listed["cache"]["memory_bytes"], self.bound_gb * 2 ** 30, delta=2)
        scene = self.server.scene()
        self.assertEqual((scene["index"], scene["scenes"], scene["scene"]), (0, 3, "toy_a"))

    def test_2_each_scene_renders_its_own_state_and_the_cache_keeps_to_its_bound(self):
        served = []
        for index, name in enumerate(NAMES):
            served.append(rgb(self.scenes.render(index, self.camera)))
            cache = self.scenes.list()["cache"]
            # One state fits the bound, two do not: the one used last is the one held.
            self.assertEqual(cache["held"], 1, cache)
            self.assertLessEqual(cache["held_bytes"], cache["memory_bytes"])
            self.assertEqual((cache["encodes"], cache["loads"]), (index + 1, 0), cache)
        self.assertEqual(self.scenes.list()["cache"]["releases"], 2)
        for index, name in enumerate(NAMES):
            # Saved under --out/states: a state file `lact render` reads, rendering what the server served.
            self.assertEqual(served[index], self.rendered_from_state(self.state_file(index), name), name)
        # And that state is the scene's own: `lact encode` of that scene renders the same camera alike.
        for index in (0, 1):
            fresh = os.path.join(self.tmp, "fresh_%d.safetensors" % index)
            ran_ok(run("encode", "--model", self.model, "--data", self.index, "--scene", NAMES[index],
                       "--inputs", self.inputs, "-o", fresh))
            self.assertGreater(psnr(served[index][2], self.rendered_from_state(fresh, "fresh%d" % index)[2]), 40)
        # The scenes differ (toy_b's colours are inverted): each render is of the scene asked for.
        self.assertLess(psnr(served[0][2], served[1][2]), 20)
        self.assertEqual(served[0], served[2])  # toy_c has toy_a's pictures

        # A released scene is read back from its state file, not encoded again.
        again = rgb(self.scenes.render(0, self.camera))
        cache = self.scenes.list()["cache"]
        self.assertEqual((cache["encodes"], cache["loads"], cache["held"]), (3, 1, 1), cache)
        self.assertEqual(again, served[0])
        listed = self.scenes.list()["scenes"]
        self.assertEqual([s["state_file"] for s in listed], ["0_toy_a.lact", "1_toy_b.lact", "2_toy_c.lact"])
        print("ok: 3 scenes, --cache-memory %.2f MB (1.5 states): encodes %d, loads %d, releases %d, held %d" %
              (self.bound_gb * 1024, cache["encodes"], cache["loads"], cache["releases"], cache["held"]))

    def test_3_a_stream_moves_between_scenes(self):
        ws = WebSocket(self.server.stream_url())
        try:
            first = next_message(ws, "scene")
            self.assertEqual((first["index"], first["scenes"]), (0, 3))
            ws.send_json({"type": "scene", "scene": 1})
            moved = next_message(ws, "scene")
            self.assertEqual((moved["index"], moved["scene"], moved["client"]), (1, "toy_b", first["client"]))
            ws.send_json({"type": "camera", "camera": self.camera, "view": 2})
            header, images = next_message(ws, "frame")
            self.assertEqual(rgb(images["render"]), rgb(self.scenes.render(1, self.camera)))
            self.assertIn("psnr", header)  # measured against toy_b's own ground truth
            # A bad choice is one error message; the stream stays on its scene.
            for bad, words in (({"type": "scene", "scene": 3}, "[0, 3)"), ({"type": "scene", "scene": "toy_a"}, "scene"),
                               ({"type": "scene"}, "no \"scene\"")):
                ws.send_json(bad)
                self.assertIn(words, next_message(ws, "error")["message"])
            ws.send_json({"type": "camera", "camera": self.camera, "view": 2})
            header, images = next_message(ws, "frame")
            self.assertEqual(rgb(images["render"]), rgb(self.scenes.render(1, self.camera)))
        finally:
            ws.close()

    def test_4_bad_scene_choices_are_one_line(self):
        for scene in (3, -1, "toy_a", 1.5, None):
            status, _, body = self.server.render(dict(self.camera, scene=scene))
            self.assertEqual(status, 400, (scene, body))
            self.assertIn("scene", json.loads(body)["error"])
        for query, code in (("?scene=3", 404), ("?scene=x", 400), ("?scene=", 400), ("?scene=99999999", 400)):
            status, _, body = self.server.request("GET", "/api/scene" + query)
            self.assertEqual(status, code, (query, body))
        self.assertEqual(self.server.request("POST", "/api/scenes")[0], 405)

    def test_4_a_video_of_another_scene(self):
        ws = WebSocket(self.server.stream_url())
        try:
            client = next_message(ws, "scene")["client"]  # on scene 0
            query = "/api/video?client=%d" % client
            body = dict(camera_path([self.camera] * 3), fps=10, scene=1)
            self.scenes.render(1, self.camera)  # scene 1 in memory (a video of a scene not in memory is a 503)
            status, _, answer = self.server.request("POST", query, body=json.dumps(body).encode())
            self.assertEqual(status, 202, answer)
            job = json.loads(answer)["id"]
            status, _, answer = self.server.request("POST", query, body=json.dumps(dict(body, scene=3)).encode())
            self.assertEqual(status, 400, answer)
            self.assertIn("scene", json.loads(answer)["error"])
            while True:
                state = next_message(ws, "video")
                if state["state"] in ("done", "failed", "cancelled"):
                    break
            self.assertEqual(state["state"], "done", state)
            status, _, mp4 = self.server.request("GET", "/api/video/%d.mp4?client=%d" % (job, client))
            self.assertEqual(status, 200)
            path = os.path.join(self.tmp, "scene1.mp4")
            with open(path, "wb") as f:
                f.write(mp4)
            first = decoded_frames(path, 64, 64)[0]
            expected = self.rendered_from_state(self.state_file(1), "video1")[2]
            self.assertGreater(psnr(first, expected), 30)  # toy_b's frame, through the video codec
            self.assertLess(psnr(first, self.rendered_from_state(self.state_file(0), "video0")[2]), 20)
        finally:
            ws.close()

    def test_5_a_second_server_reads_the_saved_states(self):
        # A state file under --out/states recording another encoding (toy_a's in toy_b's place) is left alone.
        expected = rgb(self.scenes.render(2, self.camera))  # before a file the first server reads changes
        replaced = self.state_file(1)
        shutil.copy(self.state_file(1), replaced + ".bak")
        shutil.copy(self.state_file(0), replaced)
        second = Server(ARGS.lact, *self.flags)
        try:
            second.ready()
            scenes = Scenes(second)
            cache = scenes.list()["cache"]
            self.assertEqual((cache["encodes"], cache["loads"]), (0, 1), cache)  # toy_a read at start
            self.assertEqual(rgb(scenes.render(2, self.camera)), expected)
            cache = scenes.list()["cache"]
            self.assertEqual((cache["encodes"], cache["loads"]), (0, 2), cache)
            served = rgb(scenes.render(1, self.camera))
            self.assertEqual(scenes.list()["cache"]["encodes"], 1)  # toy_b encoded again, not read from toy_a's
            self.assertLess(psnr(served[2], rgb(scenes.render(0, self.camera))[2]), 20)
            warned = [l for l in second.stderr_lines if "records another encoding" in l]
            self.assertEqual(len(warned), 1, second.stderr_lines)
            with open(replaced, "rb") as f, open(self.state_file(0), "rb") as g:
                self.assertEqual(f.read(), g.read())  # not replaced
        finally:
            stop_cleanly(second)
            shutil.move(replaced + ".bak", replaced)


class FailedSceneTest(unittest.TestCase):
    """A scene whose input view does not decode fails alone: its requests are refused saying why, the others serve."""

    def test_a_failed_scene_is_refused_and_the_others_serve(self):
        tmp = tempfile.mkdtemp(prefix="lact_serve_failed_")
        model, _, inputs = shipped(ARGS.root)
        index = scene_index(ARGS.root, tmp, ("toy_a", "broken"))
        with open(os.path.join(tmp, "broken", "016.png"), "r+b") as f:  # input view 16, cut short
            f.truncate(100)
        server = Server(ARGS.lact, "--model", model, "--data", index, "--inputs", inputs, "--no-token",
                        "--out", os.path.join(tmp, "out"))
        try:
            camera = server.ready()["views"][2]["camera"]
            status, body = Scenes(server).answer(1, camera)
            self.assertEqual(status, 500, body)
            self.assertIn("scene 1 could not be encoded: ", json.loads(body)["error"])
            self.assertIn("016.png", json.loads(body)["error"])
            self.assertEqual([s["status"] for s in Scenes(server).list()["scenes"]], ["ready", "failed"])
            self.assertEqual(Scenes(server).render(0, camera)[:4], b"\x89PNG")
            self.the_failure_names_no_path_of_this_machine(server, tmp, body)
            self.a_camera_on_the_failed_scene_is_answered(server, camera)
            self.the_page_shows_the_failure(server)
            self.assertTrue(server.alive())
        finally:
            se = stop_cleanly(server)
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertIn("scene 'broken': failed: ", se)
        self.assertIn(os.path.join(tmp, "broken", "016.png"), se)  # the terminal names the file in full

    def the_failure_names_no_path_of_this_machine(self, server, tmp, render_answer):
        """Before: the answers named the image as /tmp/.../broken/016.png; now relative to the scene's folder."""
        status, _, scene = server.request("GET", "/api/scene?scene=1")
        self.assertEqual(status, 200, scene)
        error = json.loads(scene)["status"]["error"]
        self.assertTrue(error.startswith("016.png: "), error)
        for answer in (render_answer, scene):
            self.assertNotIn(tmp.encode(), answer)

    def a_camera_on_the_failed_scene_is_answered(self, server, camera):
        """Before: a camera sent on the stream of a failed scene got no answer at all."""
        ws = WebSocket(server.stream_url())
        try:
            next_message(ws, "scene")
            ws.send_json({"type": "scene", "scene": 1})
            self.assertEqual(next_message(ws, "scene")["status"]["status"], "failed")
            ws.send_json({"type": "camera", "camera": camera, "view": 2})
            message = next_message(ws, "error", timeout=30)["message"]
            self.assertTrue(message.startswith("scene 1 could not be encoded: 016.png: "), message)
        finally:
            ws.close()

    def the_page_shows_the_failure(self, server):
        """Before: the page's status handler threw on a status without encode_s (TypeError at onStatus), so a
        scene's failure was never shown."""
        shown = run_page_harness(self, ARGS.root, server.url, 1, "failed")
        self.assertTrue(shown["stage"].startswith("failed: 016.png: "), shown)
        self.assertTrue(shown["message"].startswith("scene 1 could not be encoded"), shown)


class ReleaseTest(unittest.TestCase):
    """A scene with a client's camera on its render thread is not released for another scene's state."""

    def test_a_camera_waiting_on_a_ready_scene_gets_its_frame(self):
        """Before: client A on ready scene 0 sent a camera while client B's move to scene 1 encoded it (the encode
        holds the Run, so A's camera waited on scene 0's render thread). Scene 1 ready, the bound of 1.5 states
        released scene 0 and A's camera with it: A read status "encoding" and never got a frame. Only a request
        held before its scene was ready counted as one a client waits on."""
        tmp = tempfile.mkdtemp(prefix="lact_serve_release_")
        model, _, inputs = shipped(ARGS.root)
        index = scene_index(ARGS.root, tmp, NAMES[:2])
        probe = os.path.join(tmp, "probe.safetensors")
        ran_ok(run("encode", "--model", model, "--data", index, "--scene", "toy_a", "--inputs", inputs, "-o", probe))
        bound_gb = "%.9f" % (1.5 * os.path.getsize(probe) / 2 ** 30)
        server = Server(ARGS.lact, "--model", model, "--data", index, "--inputs", inputs, "--targets", "2,10",
                        "--no-token", "--out", os.path.join(tmp, "out"), "--cache-memory", bound_gb)
        a = b = None
        try:
            camera = server.ready()["views"][2]["camera"]
            a, b = WebSocket(server.stream_url()), WebSocket(server.stream_url())
            next_message(a, "scene")
            next_message(b, "scene")
            b.send_json({"type": "scene", "scene": 1})  # scene 1's encode starts
            self.assertEqual(next_message(b, "scene")["status"]["status"], "encoding")
            a.send_json({"type": "camera", "camera": camera, "view": 2})
            header, images = next_message(a, "frame", timeout=60)
            self.assertIn("psnr", header)
            b.send_json({"type": "camera", "camera": camera, "view": 2})
            next_message(b, "frame", timeout=60)
            self.assertEqual(rgb(images["render"]), rgb(Scenes(server).render(0, camera)))
            self.assertEqual(Scenes(server).list()["cache"]["encodes"], 2)
        finally:
            for ws in (a, b):
                if ws:
                    ws.close()
            stop_cleanly(server)
            shutil.rmtree(tmp, ignore_errors=True)


class SeveralStatesTest(unittest.TestCase):
    """--state given several times: one scene each, one model for all."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_serve_states_")
        cls.model, _, cls.inputs = shipped(ARGS.root)
        cls.index = scene_index(ARGS.root, cls.tmp, NAMES)
        cls.states = []
        for name in NAMES[:2]:
            path = os.path.join(cls.tmp, name + ".safetensors")
            ran_ok(run("encode", "--model", cls.model, "--data", cls.index, "--scene", name, "--inputs", cls.inputs,
                       "-o", path))
            cls.states.append(path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def refused(self, flags, words):
        rc, so, se = run("serve", "--port", 0, "--no-token", *flags, timeout=120)
        lines = [l for l in se.strip().splitlines() if not l.startswith("lact: warning:")]
        self.assertEqual((rc, len(lines)), (1, 1), se)
        self.assertNotIn("open http", so)
        for word in words:
            self.assertIn(word, lines[0])
        print(lines[0])

    def test_each_state_is_a_scene(self):
        out = os.path.join(self.tmp, "out")
        server = Server(ARGS.lact, "--state", self.states[0], "--state", self.states[1], "--no-token", "--out", out)
        try:
            server.ready()
            scenes = Scenes(server)
            self.assertEqual([s["name"] for s in scenes.list()["scenes"]], ["toy_a", "toy_b"])
            camera = server.scene()["views"][2]["camera"]
            for index, state in enumerate(self.states):
                path = write_json(os.path.join(self.tmp, "camera.json"), camera_path([camera]))
                out = os.path.join(self.tmp, "render%d" % index)
                ran_ok(run("render", "--state", state, "--path", path, "--out", out))
                with open(os.path.join(out, "frame_0000.png"), "rb") as f:
                    self.assertEqual(rgb(scenes.render(index, camera)), rgb(f.read()))
            self.assertEqual(scenes.list()["cache"]["loads"], 2)
            self.assertFalse(os.path.exists(os.path.join(out, "states")))  # states given are not saved again
        finally:
            stop_cleanly(server)

    def test_refusals(self):
        other = os.path.join(self.tmp, "other_model.safetensors")
        scaled_model(self.model, other, 1.01)
        third = os.path.join(self.tmp, "other.safetensors")
        ran_ok(run("encode", "--model", other, "--data", self.index, "--scene", "toy_c", "--inputs", self.inputs,
                   "-o", third))
        self.refused(["--state", self.states[0], "--state", third], ["share one model"])
        self.refused(["--model", self.model, "--data", self.index, "--inputs", self.inputs, "--compare-model", other],
                     ["--compare-model", "one scene"])
        self.refused(["--state", self.states[0], "--cache-memory", "-1"], ["--cache-memory"])


if __name__ == "__main__":
    ARGS, rest = serve_test_args(__doc__.splitlines()[0])
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
