#!/usr/bin/env python3
"""Issue 36 items 2-4 as a user meets them: guard rails, defaults that say what they did, refusals.

- Guard rails: a working size far from the model's training size, cameras of the other kind (scene-like for an
  object model, object-like for a scene model), camera distances far from the training ones, a score below
  copying the nearest input: one stderr line each ("lact: warning: ..."), the same texts in report.json's
  "warnings", exit 0; --warnings off says nothing, --warnings error refuses (before the work; the baseline's after
  the report is written). Each warning's numbers are recomputed here from the cameras and the report.
- Defaults: without --size the working size is the model's training pixel count at the views' aspect (the
  270x480 desk with the 64x64 shipped model: 48x88), the views' own size for a model without that metadata; one
  line names the size, the inputs (the model's uniform:8 listed) and the output folder; render says where it wrote.
- Refusals: a target that is also an input (unless --allow-input-targets), a view given twice, --inputs rest
  (every view not a target) with --targets rest too; --inputs rest selects exactly the views that are not targets.
- tools/set_model_metadata.py sets a model's kind with its tensor bytes unchanged; the shipped model says it is
  an object model.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/guard_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny --tools tools
       --data ../shared/data
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np

from cli_common import (FixtureCase, one_error_line, parse_cli_args, ran_ok, read_safetensors,
                        write_safetensors)

ARGS = None
ROOT = None  # the checkout (tools/..)
INPUTS = "16,20,24,28,34,38,42,46"  # the shipped example's inputs


def run(*argv, timeout=300):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def warnings_in(stderr):
    return [l[len("lact: warning: "):] for l in stderr.splitlines() if l.startswith("lact: warning: ")]


def load_json(path):
    with open(path) as f:
        return json.load(f)


def c2w_of(frame):
    return np.linalg.inv(np.array(frame["w2c"], dtype=np.float64))


def cameras_of(scene_file, views):
    data = load_json(scene_file)
    frames = data["frames"] if isinstance(data, dict) else data
    return [c2w_of(frames[i]) for i in views]


def median_off_axis(c2ws):
    """Degrees between each camera's axis and the way to the point nearest every axis (least squares), median."""
    a, b = np.zeros((3, 3)), np.zeros(3)
    for m in c2ws:
        d = m[:3, 2] / np.linalg.norm(m[:3, 2])
        p = np.eye(3) - np.outer(d, d)
        a += p
        b += p @ m[:3, 3]
    point = np.linalg.solve(a, b)
    angles = []
    for m in c2ws:
        to = point - m[:3, 3]
        cos = to @ m[:3, 2] / (np.linalg.norm(to) * np.linalg.norm(m[:3, 2]))
        angles.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    return float(np.median(angles))


def uniform(count, views):
    return [int(np.floor(i * views / count + 0.5)) % views for i in range(count)]  # lround, as lact's uniform:N


class GuardTest(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shipped = os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors")
        cls.example = os.path.join(ROOT, "examples", "gso_toy_64")
        cls.desk = os.path.join(os.path.abspath(ARGS.data), "mydesk")
        # The shipped weights said to be a scene model (the tool under test here too).
        cls.scene_model = os.path.join(cls.tmp, "as_scene.safetensors")
        cls.set_metadata(cls.shipped, "kind=scene", "-o", cls.scene_model)

    @staticmethod
    def set_metadata(*argv):
        p = subprocess.run([sys.executable, "-m", "tools.set_model_metadata", *argv], cwd=ROOT, capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
        return p

    def need_desk(self):
        if not os.path.exists(os.path.join(self.desk, "opencv_cameras.json")):
            self.skipTest("%s not present" % self.desk)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def render(self, name, *flags):
        out = self.out(name)
        result = run("render", "--out", out, "--quiet", "--threads", 2, *flags)
        return result, out

    # Item 2: guard rails.

    def test_size_far_from_training(self):
        flags = ["--model", self.shipped, "--data", self.example, "--inputs", INPUTS, "--targets", "2,10"]
        (result, out) = self.render("size_128", *flags, "--size", "128x128")
        ran_ok(result)
        said = warnings_in(result[2])
        self.assertEqual(len(said), 1, result[2])
        ratio = 128 * 128 / (64 * 64)
        self.assertIn("working size 128x128 has %gx the pixels of the model's training size 64x64" % ratio, said[0])
        self.assertEqual(load_json(os.path.join(out, "report.json"))["warnings"], said)
        # Within 2x either way (and the shipped model on its own example): nothing to say.
        for size in ("64x64", "80x80", "48x48"):
            (result, out) = self.render("size_" + size, *flags, "--size", size)
            ran_ok(result)
            self.assertEqual(warnings_in(result[2]), [], size)
            self.assertEqual(load_json(os.path.join(out, "report.json"))["warnings"], [], size)
        (result, out) = self.render("size_off", *flags, "--size", "128x128", "--warnings", "off")
        ran_ok(result)
        self.assertNotIn("warning", result[2])
        self.assertEqual(load_json(os.path.join(out, "report.json"))["warnings"], [])
        (result, out) = self.render("size_error", *flags, "--size", "128x128", "--warnings", "error")
        one_error_line(self, result, ["128x128", "--warnings error"])
        self.assertFalse(os.path.exists(os.path.join(out, "report.json")), "refused before the work")
        # A camera path's frames: their own size, the same rule (the remedy is the path's --size).
        path = self.out("turntable_128.json")
        ran_ok(run("path", "turntable", "--frames", 2, "--size", "128x128", "-o", path))
        (result, out) = self.render("path_128", "--model", self.shipped, "--data", self.example, "--inputs", INPUTS,
                                    "--path", path)
        ran_ok(result)
        said = warnings_in(result[2])
        self.assertEqual(len(said), 1, result[2])
        self.assertIn("a frame's working size 128x128 has 4x the pixels", said[0])
        self.assertIn("lact path --size", said[0])

    def test_scene_cameras_for_an_object_model(self):
        self.need_desk()
        scene_file = os.path.join(self.desk, "opencv_cameras.json")
        inputs = uniform(8, 498)
        expected = median_off_axis(cameras_of(scene_file, inputs))
        self.assertGreater(expected, 45)
        rc, so, se = run("encode", "--model", self.shipped, "--data", self.desk, "-o", self.out("desk.safetensors"),
                         "--threads", 2)
        ran_ok((rc, so, se))
        said = [w for w in warnings_in(se) if "common centre" in w]
        self.assertEqual(len(said), 1, se)
        self.assertIn("mydesk: the input cameras do not look at a common centre (the median one looks %.0f deg away"
                      % expected, said[0])
        self.assertIn("scene_res", said[0])  # the pointer to the right checkpoint
        # Distances from the origin: the uniform:8 inputs reach beyond 2x the object model's 2.7.
        distances = [np.linalg.norm(m[:3, 3]) for m in cameras_of(scene_file, inputs)]
        far = [w for w in warnings_in(se) if "units from the origin" in w]
        self.assertEqual(len(far), 1, se)
        self.assertIn("are %.3g..%.3g units from the origin" % (min(distances), max(distances)), far[0])

    def test_reversed_axes_for_an_object_model(self):
        """The example's cameras with OpenGL's axes (y and z reversed) given as OpenCV ones: said as that, not as a
        scene (before: "do not look at a common centre ... use a scene model")."""
        folder = os.path.join(self.out("reversed_axes"), "gso_toy_64")
        shutil.copytree(self.example, folder)
        frames = load_json(os.path.join(folder, "opencv_cameras.json"))
        for frame in frames:
            frame["w2c"] = np.linalg.inv(c2w_of(frame) @ np.diag([1.0, -1.0, -1.0, 1.0])).tolist()
        with open(os.path.join(folder, "opencv_cameras.json"), "w") as f:
            json.dump(frames, f)
        inputs = [int(i) for i in INPUTS.split(",")]
        expected = median_off_axis(cameras_of(os.path.join(folder, "opencv_cameras.json"), inputs))
        self.assertGreater(expected, 170)
        (result, _) = self.render("reversed", "--model", self.shipped, "--data", folder, "--inputs", INPUTS,
                                  "--targets", "2")
        ran_ok(result)
        said = [w for w in warnings_in(result[2]) if "input cameras" in w]  # (also: below the nearest input)
        self.assertEqual(len(said), 1, result[2])
        self.assertIn("gso_toy_64: the input cameras each look straight away from one point (the median one looks "
                      "%.1f deg away): OpenGL or Blender poses" % expected, said[0])
        # The example as shipped (OpenCV): nothing to say.
        (result, _) = self.render("not_reversed", "--model", self.shipped, "--data", self.example, "--inputs", INPUTS,
                                  "--targets", "2")
        ran_ok(result)
        self.assertEqual(warnings_in(result[2]), [])

    def test_object_cameras_for_a_scene_model(self):
        inputs = [int(i) for i in INPUTS.split(",")]
        scene_file = os.path.join(self.example, "opencv_cameras.json")
        expected = median_off_axis(cameras_of(scene_file, inputs))
        self.assertLess(expected, 10)
        (result, out) = self.render("as_scene", "--model", self.scene_model, "--data", self.example, "--inputs", INPUTS,
                                    "--targets", "2")
        ran_ok(result)
        said = warnings_in(result[2])
        kind = [w for w in said if "all look at one point" in w]
        self.assertEqual(len(kind), 1, result[2])
        self.assertIn("(the median one within %.1f deg of it)" % expected, kind[0])
        self.assertIn("obj_res", kind[0])
        # The example's cameras reach 2.54 along an axis: beyond 2x a scene model's [-1, 1].
        extent = max(np.abs(m[:3, 3]).max() for m in cameras_of(scene_file, inputs))
        reach = [w for w in said if "reach" in w]
        self.assertEqual(len(reach), 1, result[2])
        self.assertIn("reach %.3g units along an axis" % extent, reach[0])
        self.assertIn("--normalize-poses inputs", reach[0])
        self.assertEqual(load_json(os.path.join(out, "report.json"))["warnings"], said)

    def test_scene_model_far_cameras_and_normalized_poses(self):
        self.need_desk()
        flags = ["--model", self.scene_model, "--data", self.desk, "--inputs", "0,62,124,187", "--targets", "300",
                 "--size", "64x112"]
        (result, _) = self.render("desk_raw", *flags)
        ran_ok(result)
        self.assertEqual(len([w for w in warnings_in(result[2]) if "--normalize-poses inputs" in w]), 1, result[2])
        (result, _) = self.render("desk_normalized", *flags, "--normalize-poses", "inputs")
        ran_ok(result)
        self.assertEqual([w for w in warnings_in(result[2]) if "reach" in w], [], result[2])

    def test_below_the_nearest_input(self):
        flags = ["--model", self.model, "--data", self.index, "--inputs", "0,1,2", "--targets", "3,4"]
        (result, out) = self.render("baseline", *flags)
        ran_ok(result)
        report = load_json(os.path.join(out, "report.json"))
        scene = report["scenes"][0]
        self.assertLess(scene["psnr"], scene["psnr_nearest_input"])  # the fixture's tiny model copies worse
        expected = "scene: the model scores below copying the nearest input: %.2f vs %.2f dB" % (
            scene["psnr"], scene["psnr_nearest_input"])
        self.assertEqual(warnings_in(result[2]), [expected])
        self.assertEqual(report["warnings"], [expected])
        # The shipped model beats copying on its example: no warning.
        (result, out) = self.render("baseline_shipped", "--model", self.shipped, "--data", self.example, "--inputs",
                                    INPUTS, "--targets", "2,10,18,26")
        ran_ok(result)
        scene = load_json(os.path.join(out, "report.json"))["scenes"][0]
        self.assertGreater(scene["psnr"], scene["psnr_nearest_input"])
        self.assertEqual(warnings_in(result[2]), [])
        # --warnings error: the report is written, then the run fails with the warning as its one line.
        (result, out) = self.render("baseline_error", *flags, "--warnings", "error")
        one_error_line(self, result, ["below copying the nearest input", "--warnings error"])
        self.assertEqual(load_json(os.path.join(out, "report.json"))["warnings"], [expected])

    # Item 3: defaults that say what they did.

    def test_default_size_at_the_views_aspect(self):
        self.need_desk()
        (result, out) = self.render("desk_default", "--model", self.shipped, "--data", self.desk, "--targets", "8,16")
        so = ran_ok(result)
        report = load_json(os.path.join(out, "report.json"))
        # 64x64 = 4096 pixels at 270x480: H = sqrt(4096 * 270 / 480) = 48, W = 85.3 -> 88 (multiples of 8).
        self.assertEqual(report["size"], [48, 88])
        inputs = uniform(8, 498)
        self.assertEqual(report["scenes"][0]["inputs"], inputs)
        line = [l for l in so.splitlines() if l.startswith("mydesk: ")]
        self.assertEqual(len(line), 1, so)
        self.assertIn("48x88 (the model's 64x64 pixel count at the views' 270x480 aspect)", line[0])
        self.assertIn("inputs %s (the model's uniform:8)" % ",".join(map(str, inputs)), line[0])
        self.assertTrue(line[0].endswith("-> " + os.path.join(out, "mydesk")), line[0])
        self.assertIn("results -> " + out, so)
        # A model without a training size: the views' own size (the fixture's 32x48).
        (result, out) = self.render("fixture_default", "--model", self.model, "--data", self.index,
                                    "--inputs", "0,1,2", "--targets", "3")
        so = ran_ok(result)
        self.assertEqual(load_json(os.path.join(out, "report.json"))["size"], [32, 48])
        self.assertIn("scene: 32x48 (the views' own size), inputs 0,1,2 (--inputs), 1 target", so)

    def test_default_inputs_too_many_for_the_scene(self):
        # The model's uniform:8 on a scene of 3 views: the line says the selection is the model's default, not a
        # flag the user typed (before: "--inputs uniform:8 asks for 8 views of 3" without a word of where from).
        scene = self.out("three_views")
        os.makedirs(scene, exist_ok=True)
        frames = load_json(os.path.join(self.example, "opencv_cameras.json"))[:3]
        for f in frames:
            shutil.copy(os.path.join(self.example, f["file_path"]), scene)
        with open(os.path.join(scene, "opencv_cameras.json"), "w") as f:
            json.dump(frames, f)
        (result, out) = self.render("three_default", "--model", self.shipped, "--data", scene, "--targets", "2")
        one_error_line(self, result, ["--inputs uniform:8 asks for 8 views of 3",
                                      "(the model's default --inputs, from its input_views: give --inputs)"])
        self.assertFalse(os.path.exists(out))
        (result, out) = self.render("three_typed", "--model", self.shipped, "--data", scene, "--targets", "2",
                                    "--inputs", "uniform:8")
        line = one_error_line(self, result, ["--inputs uniform:8 asks for 8 views of 3"])
        self.assertNotIn("model's default", line)
        ran_ok(self.render("three_given", "--model", self.shipped, "--data", scene, "--targets", "2",
                           "--inputs", "0,1")[0])

    def test_help_states_the_rule(self):
        rc, so, se = run("render", "--help")
        self.assertEqual(rc, 0, se)
        self.assertIn("the model's training pixel count at the views'", " ".join(so.split()))

    # Item 4: refusals.

    def test_a_target_that_is_an_input(self):
        flags = ["--model", self.model, "--data", self.index, "--inputs", "0,1,2"]
        (result, out) = self.render("seen", *flags, "--targets", "2,3")
        one_error_line(self, result, ["--targets", "view 2 is also an input", "--allow-input-targets"])
        self.assertFalse(os.path.exists(os.path.join(out, "report.json")))
        (result, out) = self.render("seen_allowed", *flags, "--targets", "2,3", "--allow-input-targets")
        ran_ok(result)
        view = load_json(os.path.join(out, "report.json"))["scenes"][0]["views"][0]
        self.assertEqual((view["index"], view["nearest_input"]), (2, 2))  # its own photo is the nearest input
        # From a state: its inputs (in its metadata) count the same.
        state = self.out("fixture_state.safetensors")
        ran_ok(run("encode", "--model", self.model, "--data", self.index, "--inputs", "0,1,2", "-o",
                   state))
        (result, _) = self.render("seen_state", "--state", state, "--targets", "1")
        one_error_line(self, result, ["--targets", "view 1 is also an input of the state"])

    def test_views_given_twice(self):
        for flag, spec in (("--inputs", "0,0,1"), ("--targets", "3,4,3")):
            other = {"--inputs": "0,1,2", "--targets": "3,4"}
            other[flag] = spec
            (result, _) = self.render("twice", "--model", self.model, "--data", self.index,
                                      "--inputs", other["--inputs"], "--targets", other["--targets"])
            one_error_line(self, result, [flag, "twice"])

    def test_inputs_rest(self):
        (result, out) = self.render("rest", "--model", self.model, "--data", self.index, "--inputs",
                                    "rest", "--targets", "1,3")
        ran_ok(result)
        scene = load_json(os.path.join(out, "report.json"))["scenes"][0]
        views = len(load_json(os.path.join(self.fx, "scene", "opencv_cameras.json")))
        self.assertEqual(scene["inputs"], [v for v in range(views) if v not in (1, 3)])
        self.assertEqual(scene["targets"], [1, 3])
        (result, _) = self.render("rest_rest", "--model", self.model, "--data", self.index,
                                  "--inputs", "rest", "--targets", "rest")
        one_error_line(self, result, ["--inputs", "'rest' on both"])
        result = run("encode", "--model", self.model, "--data", self.index, "--inputs", "rest", "-o",
                     self.out("never.safetensors"))
        one_error_line(self, result, ["--inputs", "--targets"])

    # The model's kind in its metadata.

    def test_kind_metadata(self):
        header, data = read_safetensors(self.shipped)
        self.assertEqual(header["__metadata__"]["kind"], "object")
        copy_header, copy_data = read_safetensors(self.scene_model)
        self.assertEqual(copy_header["__metadata__"]["kind"], "scene")
        self.assertEqual(copy_data, data)  # every tensor byte as it was
        self.assertEqual({k: v for k, v in copy_header.items() if k != "__metadata__"},
                         {k: v for k, v in header.items() if k != "__metadata__"})
        rc, so, se = run("info", self.scene_model)
        self.assertEqual(rc, 0, se)
        self.assertIn("trained on: scenes, 64x64, 8 input views\n", so)
        # Only the kind recorded: the parts it does not record say so in words (once "0x0, 0 input views").
        copy_header["__metadata__"] = {k: v for k, v in copy_header["__metadata__"].items()
                                       if k not in ("image_size", "input_views")}
        kind_only = self.out("kind_only.safetensors")
        write_safetensors(kind_only, copy_header, copy_data)
        rc, so, se = run("info", kind_only)
        self.assertEqual(rc, 0, se)
        self.assertIn("trained on: scenes, size not recorded, input views not recorded\n", so)
        # The converter knows an official checkpoint's kind by its name (the fixture's weights under a scene name,
        # with the fixture's own config).
        named = os.path.join(self.tmp, "scene_res256x256.pt")
        shutil.copy(os.path.join(self.fx, "model.pt"), named)
        converted = self.out("converted.safetensors")
        p = subprocess.run([sys.executable, "-m", "tools.convert_checkpoint", named, "--config",
                            os.path.join(self.fx, "config.json"), "-o", converted], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(read_safetensors(converted)[0]["__metadata__"]["kind"], "scene")
        rc, so, se = run("info", converted)
        self.assertIn("trained on: scenes, 256x256, 32 input views", so)
        bad = subprocess.run([sys.executable, "-m", "tools.set_model_metadata", self.shipped, "kind=room", "-o",
                              self.out("never.safetensors")], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("object or scene", bad.stderr)


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__.splitlines()[0])
    ROOT = os.path.abspath(os.path.join(ARGS.tools, ".."))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
