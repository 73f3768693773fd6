#!/usr/bin/env python3
"""Camera paths in the state's frame (issue 36 item 6): `lact path ... --state S` makes cameras in the frame S
renders in (its --normalize-poses); a path file records the frame it was made in, and `render` refuses a path of
another frame in one line that says how to remake it; a path without a frame (an older file) is read as raw, with
a warning when the state is normalised.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/path_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import json
import os
import subprocess
import sys
import unittest

import numpy as np

from cli_common import FixtureCase, one_error_line, parse_cli_args, ran_ok, read_safetensors

ARGS = None


def run(*argv, timeout=300):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def load_json(path):
    with open(path) as f:
        return json.load(f)


class Frames(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        encode = ["encode", "--model", cls.model, "--data", cls.cameras, "--inputs", "0,1,2", "--threads", "1"]
        cls.normalised = os.path.join(cls.tmp, "normalised.safetensors")
        ran_ok(run(*encode, "--normalize-poses", "all", "-o", cls.normalised))
        cls.raw = os.path.join(cls.tmp, "raw.safetensors")
        ran_ok(run(*encode, "-o", cls.raw))

    def file(self, name):
        return os.path.join(self.tmp, name)

    def path(self, name, *argv):
        out = self.file(name)
        ran_ok(run("path", *argv, "-o", out, "--force"))
        return out

    def render(self, state, path, out):
        return run("render", "--state", state, "--path", path, "--threads", "1", "--out", self.file(out))

    def test_state_frame_cameras_are_the_normalised_cameras(self):
        made = self.path("interp_n.json", "interpolate", "--state", self.normalised, "--keys", "0,4", "--frames", 2)
        path = load_json(made)
        meta = read_safetensors(self.normalised)[0]["__metadata__"]
        world = np.array(json.loads(meta["pose_world"])).reshape(4, 4)
        scale = json.loads(meta["pose_scale"])
        self.assertEqual(path["frame"]["normalize_poses"], "all")
        np.testing.assert_allclose(np.array(path["frame"]["pose_world"]).reshape(4, 4), world, atol=1e-12)
        self.assertAlmostEqual(path["frame"]["pose_scale"], scale, places=12)
        self.assertEqual(path["made_by"], "interpolate")
        # The first and last frames are views 0 and 4, normalised by hand: world * c2w, translation / scale.
        views = load_json(self.cameras)
        for frame, view in ((path["frames"][0], views[0]), (path["frames"][-1], views[4])):
            c2w = world @ np.linalg.inv(np.array(view["w2c"]))
            c2w[:3, 3] /= scale
            np.testing.assert_allclose(np.array(frame["c2w"]), c2w, atol=1e-5)
            self.assertEqual((frame["h"], frame["w"]), (32, 48))  # the state's working size
        ran_ok(self.render(self.normalised, made, "ok_n"))
        self.assertTrue(os.path.exists(self.file("ok_n/frame_0001.png")))

    def test_a_path_of_another_frame_is_refused(self):
        raw_path = self.path("orbit_raw.json", "orbit", "--data", self.cameras, "--frames", 3)
        self.assertEqual(load_json(raw_path)["frame"], {"normalize_poses": "none"})
        line = one_error_line(self, self.render(self.normalised, raw_path, "refused"),
                              ["orbit_raw.json", "raw coordinates", "normalised.safetensors",
                               "lact path orbit --state"])
        self.assertFalse(os.path.exists(self.file("refused/frame_0000.png")), line)
        normalised_path = self.path("orbit_n.json", "orbit", "--state", self.normalised, "--frames", 3)
        one_error_line(self, self.render(self.raw, normalised_path, "refused_raw"),
                       ["orbit_n.json", "--normalize-poses all", "raw coordinates"])
        ran_ok(self.render(self.raw, raw_path, "ok_raw"))
        # Made with --normalize-poses from the data itself: the same frame as the state's, accepted.
        same = self.path("orbit_same.json", "orbit", "--data", self.cameras, "--normalize-poses", "all", "--frames", 3)
        ran_ok(self.render(self.normalised, same, "ok_same"))
        np.testing.assert_allclose([f["c2w"] for f in load_json(same)["frames"]],
                                   [f["c2w"] for f in load_json(normalised_path)["frames"]], atol=1e-9)

    def test_a_path_without_a_frame_is_read_as_raw_with_a_warning(self):
        old = load_json(self.path("old.json", "turntable", "--frames", 2, "--size", "32x48"))
        del old["frame"], old["made_by"]
        with open(self.file("old.json"), "w") as f:
            json.dump(old, f)
        rc, so, se = self.render(self.normalised, self.file("old.json"), "old_n")
        ran_ok((rc, so, se))
        self.assertIn("warning: %s records no frame" % self.file("old.json"), se)
        self.assertIn("--normalize-poses all", se)
        rc, so, se = self.render(self.raw, self.file("old.json"), "old_raw")
        ran_ok((rc, so, se))
        self.assertNotIn("warning", se)

    def test_flags(self):
        one_error_line(self, run("path", "orbit", "--state", self.normalised, "--normalize-poses", "inputs", "-o",
                                 self.file("x.json")), ["--normalize-poses", "--state"])
        broken = load_json(self.path("b.json", "turntable", "--frames", 2, "--size", "32x48"))
        broken["frame"] = {"normalize_poses": "inputs", "pose_world": [1, 0], "pose_scale": 2}
        with open(self.file("b.json"), "w") as f:
            json.dump(broken, f)
        one_error_line(self, self.render(self.raw, self.file("b.json"), "broken"), ["b.json", "frame", "pose_world"])
        # A turntable made for a state is in its frame and at its size.
        turn = load_json(self.path("t.json", "turntable", "--state", self.normalised, "--frames", 2))
        self.assertEqual(turn["frame"]["normalize_poses"], "all")
        self.assertEqual((turn["frames"][0]["h"], turn["frames"][0]["w"]), (32, 48))

    def test_a_size_off_the_patch_and_a_single_key_are_one_line(self):
        # --size 100x100 was written, and render refused the path only after loading its state.
        for kind, extra in (("turntable", []), ("orbit", ["--data", self.cameras])):
            out = self.file("size_%s.json" % kind)
            one_error_line(self, run("path", kind, *extra, "--size", "100x96", "-o", out), ["--size", "100x96", "96x96"])
            self.assertFalse(os.path.exists(out))
        # One key: orbit said "camera path: degenerate direction", interpolate named no flag.
        for kind in ("orbit", "interpolate"):
            out = self.file("one_key_%s.json" % kind)
            one_error_line(self, run("path", kind, "--data", self.cameras, "--keys", "2", "-o", out),
                           ["--keys", "'2' selects 1"])
            self.assertFalse(os.path.exists(out))
        # "rest" (the views that are not targets) selected every view: a path has no targets.
        for kind in ("orbit", "interpolate"):
            out = self.file("rest_%s.json" % kind)
            one_error_line(self, run("path", kind, "--data", self.cameras, "--keys", "rest", "-o", out),
                           ["--keys", "'rest'", "no --targets"])
            self.assertFalse(os.path.exists(out))

    def test_orbit_geometry(self):
        """Each camera looks at the point nearest the scene's optical axes (least squares, here in numpy), at the
        given radius and elevation above the plane normal to the cameras' mean up, from the first camera's azimuth;
        rotations proper, OpenCV."""
        frames = load_json(self.path("geo.json", "orbit", "--data", self.cameras, "--radius", 2.5, "--elevation", 20,
                                     "--frames", 7))["frames"]
        views = [np.linalg.inv(np.array(v["w2c"])) for v in load_json(self.cameras)]
        a = sum(np.eye(3) - np.outer(v[:3, 2], v[:3, 2]) for v in views)
        b = sum((np.eye(3) - np.outer(v[:3, 2], v[:3, 2])) @ v[:3, 3] for v in views)
        centre = np.linalg.solve(a, b)
        up = -np.mean([v[:3, 1] for v in views], axis=0)
        up /= np.linalg.norm(up)
        self.assertEqual(len(frames), 7)
        for f in frames:
            c2w = np.array(f["c2w"])
            rotation, offset = c2w[:3, :3], centre - c2w[:3, 3]
            np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-9)
            self.assertAlmostEqual(np.linalg.det(rotation), 1.0, places=9)
            self.assertAlmostEqual(np.linalg.norm(offset), 2.5, places=5)
            np.testing.assert_allclose(rotation[:, 2], offset / np.linalg.norm(offset), atol=1e-6)  # z forward
            self.assertAlmostEqual(np.degrees(np.arcsin(-offset @ up / 2.5)), 20, places=4)
            self.assertGreater(-rotation[:, 1] @ up, 0.9)  # image y down: its negation is up
        # The first frame at the first camera's azimuth about the centre (it started on an arbitrary axis), the next
        # counter-clockwise about up.
        def azimuth_direction(position):
            flat = (position - centre) - ((position - centre) @ up) * up
            return flat / np.linalg.norm(flat)
        first = azimuth_direction(np.array(frames[0]["c2w"])[:3, 3])
        np.testing.assert_allclose(first, azimuth_direction(views[0][:3, 3]), atol=1e-6)
        second = azimuth_direction(np.array(frames[1]["c2w"])[:3, 3])
        self.assertAlmostEqual(np.degrees(np.arctan2(np.cross(first, second) @ up, first @ second)), 360 / 7, places=4)

    def test_an_orbit_around_a_point_behind_the_cameras_is_warned_of(self):
        # Forward-facing cameras whose axes spread outwards (a handheld capture such as the desk) meet behind
        # themselves: the orbit was written with no word that it looks away from everything they saw.
        views = load_json(self.cameras)
        for i, view in enumerate(views):
            yaw = np.radians(10 * (i - 2))  # camera i at x = i - 2, turned outwards
            c2w = np.eye(4)
            c2w[:3, :3] = [[np.cos(yaw), 0, np.sin(yaw)], [0, 1, 0], [-np.sin(yaw), 0, np.cos(yaw)]]
            c2w[0, 3] = i - 2
            view["w2c"] = np.linalg.inv(c2w).tolist()
            view["file_path"] = os.path.join(os.path.dirname(self.cameras), view["file_path"])
        spread = self.file("spread_cameras.json")
        with open(spread, "w") as f:
            json.dump(views, f)
        rc, so, se = run("path", "orbit", "--data", spread, "--keys", "0-4", "-o", self.file("behind.json"))
        ran_ok((rc, so, se))
        lines = se.strip().splitlines()
        self.assertEqual(len(lines), 1, se)
        self.assertTrue(lines[0].startswith("lact: warning: --keys: the cameras do not look at a common point"), se)
        self.assertIn("lact path interpolate", lines[0])
        rc, so, se = run("path", "orbit", "--data", self.cameras, "-o", self.file("around.json"))  # an object's
        ran_ok((rc, so, se))
        self.assertEqual(se, "")

    def test_size_help_names_no_model(self):
        # `lact path --help` said --size defaults to "the model's training pixel count": a path has no model.
        so = ran_ok(run("path", "--help"))
        size = so[so.index("\n  --size "):]
        size = " ".join(size[:size.index("\n  --", 1)].split())
        self.assertNotIn("model", size)
        self.assertIn("about 256x256 pixels", size)


def main():
    global ARGS
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
