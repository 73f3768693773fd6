#!/usr/bin/env python3
"""End-to-end tests of evaluation: `lact render` reports, camera paths and videos, eval-compare, bad input.

Run: PYTHONPATH=tests/common:. /usr/bin/python3 tests/cli/eval_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
     --data ../shared/data
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

from tools.reference import safetensors_io

ARGS = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lact(*args):
    return subprocess.run([ARGS.lact, *map(str, args)], capture_output=True, text=True)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def psnr(a, b):
    mse = np.mean((np.clip(a, 0, 1).astype(np.float64) - np.clip(b, 0, 1)) ** 2)
    return -10 * np.log10(mse)


class Evaluation(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lact_eval_")
        self.model = os.path.join(ARGS.fixture, "model.safetensors")
        self.index = os.path.join(ARGS.fixture, "index.json")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def one_line_error(self, r):
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("lact: "), r.stderr)
        return lines[0]

    def test_report_equals_metrics_recomputed_from_npy(self):
        out = os.path.join(self.tmp, "a")
        r = lact("render", "--model", self.model, "--data", self.index, "--inputs", "0,1,2", "--targets", "3,4",
                 "--save-npy", "--save-images", "--out", out, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        report = load_json(os.path.join(out, "report.json"))
        expected, _ = safetensors_io.load(os.path.join(ARGS.fixture, "expected.safetensors"))
        gt = expected["target_images_gt"].numpy().transpose(0, 2, 3, 1)  # [2, H, W, 3]
        from skimage.metrics import structural_similarity
        scene = report["scenes"][0]
        self.assertEqual(scene["targets"], [3, 4])
        mses = []
        for i, view in enumerate(scene["views"]):
            pred = np.load(os.path.join(out, "scene", "%d.npy" % view["index"]))
            p = psnr(pred, gt[i])
            s = structural_similarity(pred.astype(np.float64), gt[i].astype(np.float64), gaussian_weights=True,
                                      sigma=1.5, use_sample_covariance=True, data_range=1.0, channel_axis=-1)
            print("view %d: report psnr %.6f ssim %.6f, recomputed %.6f %.6f" % (view["index"], view["psnr"],
                                                                                 view["ssim"], p, s))
            self.assertAlmostEqual(view["psnr"], p, delta=1e-4)
            self.assertAlmostEqual(view["ssim"], s, delta=1e-4)
            mses.append(np.mean((np.clip(pred, 0, 1).astype(np.float64) - gt[i]) ** 2))
            for suffix in ("_gt.png", "_diff.png", ".png"):
                self.assertTrue(os.path.exists(os.path.join(out, "scene", "%d%s" % (view["index"], suffix))))
        self.assertAlmostEqual(scene["psnr_pooled"], -10 * np.log10(np.mean(mses)), delta=1e-4)
        self.assertAlmostEqual(report["psnr"], np.mean([v["psnr"] for v in scene["views"]]), delta=1e-9)
        for key in ("model", "config", "data", "size", "views", "psnr_nearest_input", "encode_s_total",
                    "render_ms_per_view"):
            self.assertIn(key, report)
        self.assertRegex(report["model_identity"], r"^%d:[0-9a-f]{16}$" % os.path.getsize(self.model))
        # Each view names its photo, the file the scene's camera file gives that view.
        cameras = load_json(os.path.join(ARGS.fixture, "scene", "opencv_cameras.json"))
        for view in scene["views"]:
            self.assertEqual(os.path.realpath(view["image"]),
                             os.path.realpath(os.path.join(ARGS.fixture, "scene", cameras[view["index"]]["file_path"])))
        csv = open(os.path.join(out, "report.csv")).read().splitlines()
        self.assertEqual(len(csv), 3)
        # A second run compared with the first: zero differences.
        out2 = os.path.join(self.tmp, "b")
        lact("render", "--model", self.model, "--data", self.index, "--inputs", "0,1", "--targets", "3,4",
             "--out", out2, "--quiet")
        c = lact("eval-compare", os.path.join(out, "report.json"), os.path.join(out2, "report.json"))
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("overall psnr", c.stdout)

    def test_state_render_reports_the_same(self):
        state = os.path.join(self.tmp, "s.safetensors")
        self.assertEqual(lact("encode", "--model", self.model, "--data", self.index, "--inputs", "0,1,2",
                              "-o", state).returncode, 0)
        direct, via_state = os.path.join(self.tmp, "d"), os.path.join(self.tmp, "v")
        lact("render", "--model", self.model, "--data", self.index, "--inputs", "0,1,2", "--targets", "3,4",
             "--out", direct, "--quiet")
        r = lact("render", "--state", state, "--targets", "3,4", "--out", via_state, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        a = load_json(os.path.join(direct, "report.json"))["scenes"][0]
        b = load_json(os.path.join(via_state, "report.json"))["scenes"][0]
        for va, vb in zip(a["views"], b["views"]):
            self.assertAlmostEqual(va["psnr"], vb["psnr"], delta=1e-5)
            self.assertEqual(va["nearest_input"], vb["nearest_input"])

    def test_turntable_frames_poses_and_video(self):
        path = os.path.join(self.tmp, "turntable.json")
        self.assertEqual(lact("path", "turntable", "--frames", 120, "--size", "32x32", "-o", path).returncode, 0)
        frames = load_json(path)["frames"]
        self.assertEqual(len(frames), 120)
        out = os.path.join(self.tmp, "tt")
        video = os.path.join(out, "turntable.mp4")
        r = lact("render", "--model", self.model, "--data", os.path.join(ARGS.data, "gso_sample_index.json"),
                 "--inputs", "uniform:8", "--size", "32x32", "--path", path, "--video", video, "--out", out, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        for i in (0, 60, 119):
            pose = load_json(os.path.join(out, "frame_%04d.json" % i))
            self.assertEqual(pose["w"], 32)
            np.testing.assert_allclose(np.array(pose["c2w"]), np.array(frames[i]["c2w"]), atol=1e-12)
            self.assertTrue(os.path.exists(os.path.join(out, "frame_%04d.png" % i)))
        self.assertFalse(os.path.exists(os.path.join(out, "frame_0120.png")))
        if shutil.which("ffmpeg"):
            self.assertGreater(os.path.getsize(video), 1000)
        # Interpolation between input cameras starts and ends on them.
        ip = os.path.join(self.tmp, "ip.json")
        self.assertEqual(lact("path", "interpolate", "--data", self.index, "--keys", "0,1", "--frames", 4,
                              "-o", ip).returncode, 0)
        keys = load_json(ip)["frames"]
        self.assertEqual(len(keys), 4)  # --frames in all

    def test_broken_scene_is_reported_and_others_evaluated(self):
        index = os.path.join(self.tmp, "index.json")
        shutil.copytree(os.path.join(ARGS.fixture, "scene"), os.path.join(self.tmp, "good"))
        os.makedirs(os.path.join(self.tmp, "bad"))
        with open(os.path.join(self.tmp, "bad", "opencv_cameras.json"), "w") as f:
            f.write("[{\"w\": 48,")
        with open(index, "w") as f:
            json.dump(["good/opencv_cameras.json", "bad/opencv_cameras.json", "missing/opencv_cameras.json"], f)
        out = os.path.join(self.tmp, "o")
        r = lact("render", "--model", self.model, "--data", index, "--inputs", "0,1,2", "--targets", "3,4",
                 "--out", out, "--quiet")
        self.assertEqual(r.returncode, 1)
        report = load_json(os.path.join(out, "report.json"))
        self.assertEqual([s["name"] for s in report["scenes"]], ["good"])
        self.assertEqual(len(report["failed"]), 2)
        self.assertIn("corrupt JSON", report["failed"][0]["error"])
        self.assertIn("2 of 3 scenes failed", r.stderr)

    def test_unwritable_out_fails_before_any_work(self):
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        r = lact("render", "--model", "/nonexistent/model.safetensors", "--data", self.index, "--inputs", "0",
                 "--targets", "1", "--out", os.path.join(blocker, "sub"))
        line = self.one_line_error(r)
        self.assertIn(os.path.join(blocker, "sub"), line)  # the output folder, not the (also missing) model


    def example_index(self, scenes):
        """An index of `scenes` links to the shipped example (64 views at 64x64, about 0.1 s a scene)."""
        example = os.path.join(ROOT, "examples", "gso_toy_64")
        names = []
        for i in range(scenes):
            os.symlink(example, os.path.join(self.tmp, "s%02d" % i))
            names.append("s%02d/opencv_cameras.json" % i)
        index = os.path.join(self.tmp, "examples.json")
        with open(index, "w") as f:
            json.dump(names, f)
        return [ARGS.lact, "render", "--model", os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors"), "--data",
                index, "--inputs", "16,20,24,28", "--targets", "0-9", "--threads", "1", "--no-lpips", "--quiet"]

    def test_interrupted_evaluation_leaves_no_csv_that_reads_as_whole(self):
        """Ctrl-C after some scenes: report.json says "complete": false; a report.csv of those scenes had no field to
        say so (it read as the whole evaluation), so there is none until --resume finishes, then every view."""
        argv = self.example_index(12)
        out = os.path.join(self.tmp, "cut")
        p = subprocess.Popen(argv + ["--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 300
        while time.time() < deadline and p.poll() is None:
            try:
                if load_json(os.path.join(out, "report.json"))["scenes"]:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.02)
        self.assertIsNone(p.poll(), "the evaluation ended before it could be interrupted")
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
        kept = load_json(os.path.join(out, "report.json"))
        self.assertFalse(kept["complete"])
        self.assertLess(len(kept["scenes"]), 12)
        self.assertFalse(os.path.exists(os.path.join(out, "report.csv")), os.listdir(out))
        r = subprocess.run(argv + ["--out", out, "--resume"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = load_json(os.path.join(out, "report.json"))
        self.assertTrue(report["complete"])
        with open(os.path.join(out, "report.csv")) as f:
            rows = f.read().splitlines()[1:]
        views = [(s["name"], v) for s in report["scenes"] for v in s["views"]]
        self.assertEqual(len(rows), 12 * 10)
        for row, (name, view) in zip(rows, views):
            cells = row.split(",")
            self.assertEqual((cells[0], int(cells[1])), (name, view["index"]))
            self.assertAlmostEqual(float(cells[2]), view["psnr"], delta=1e-3)

    def mixed_index(self, folder, width):
        """An index of the shipped example and 'narrow': its views' middle `width` columns (another aspect)."""
        from PIL import Image
        example = os.path.join(ROOT, "examples", "gso_toy_64")
        narrow = os.path.join(self.tmp, folder, "narrow")
        os.makedirs(narrow)
        cameras = load_json(os.path.join(example, "opencv_cameras.json"))
        left = (64 - width) // 2
        for c in cameras:
            Image.open(os.path.join(example, c["file_path"])).crop((left, 0, left + width, 64)).save(
                os.path.join(narrow, c["file_path"]))
            c["w"], c["cx"] = width, c["cx"] - left
        with open(os.path.join(narrow, "opencv_cameras.json"), "w") as f:
            json.dump(cameras, f)
        index = os.path.join(self.tmp, folder, "mixed.json")
        with open(index, "w") as f:
            json.dump([os.path.join(example, "opencv_cameras.json"), "narrow/opencv_cameras.json"], f)
        return index

    def test_each_scene_reports_its_own_working_size(self):
        """Scenes of other aspects are rendered at other sizes: each scene's `size` is its renders' (the header's
        `size` is the first scene's, which was all the report said); eval-compare warns where a scene's differs."""
        from PIL import Image
        model = os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors")
        outs = []
        for width in (48, 32):
            outs.append(os.path.join(self.tmp, "out%d" % width))
            r = lact("render", "--model", model, "--data", self.mixed_index("w%d" % width, width), "--inputs", "0,32",
                     "--targets", "1,2", "--no-lpips", "--threads", 1, "--quiet", "--out", outs[-1])
            self.assertEqual(r.returncode, 0, r.stderr)
        sizes = []
        for out in outs:
            report = load_json(os.path.join(out, "report.json"))
            for scene in report["scenes"]:
                with Image.open(os.path.join(out, scene["folder"], "1.png")) as png:
                    self.assertEqual(scene["size"], [png.height, png.width], scene["name"])
            self.assertEqual(report["size"], [64, 64])  # the first scene's
            sizes.append(report["scenes"][1]["size"])
        self.assertNotEqual(sizes[0], sizes[1])
        c = lact("eval-compare", os.path.join(outs[0], "report.json"), os.path.join(outs[1], "report.json"))
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("scene 'narrow' is at size [%d,%d] in A and [%d,%d] in B" % (*sizes[0], *sizes[1]), c.stderr)

    def test_mean_row_of_the_table_holds_means(self):
        """The printed "mean over scenes" row: every column the mean of the scenes' rows (encode s was their sum)."""
        out = os.path.join(self.tmp, "two")
        r = subprocess.run(self.example_index(2) + ["--out", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = load_json(os.path.join(out, "report.json"))
        mean_row = [line for line in r.stdout.splitlines() if line.startswith("mean over scenes")][0]
        psnr_, pooled, ssim, nearest, white, encode_s, render_ms = map(float, mean_row.split()[3:])
        scenes = report["scenes"]
        self.assertAlmostEqual(psnr_, np.mean([s["psnr"] for s in scenes]), delta=6e-4)
        self.assertAlmostEqual(ssim, np.mean([s["ssim"] for s in scenes]), delta=6e-5)
        self.assertAlmostEqual(encode_s, np.mean([s["encode_s"] for s in scenes]), delta=6e-4)
        self.assertAlmostEqual(render_ms, np.mean([s["render_ms_per_view"] for s in scenes]), delta=0.06)
        self.assertAlmostEqual(report["encode_s_total"], sum(s["encode_s"] for s in scenes), delta=1e-9)

    def test_eval_compare_refuses_or_warns_when_not_like_for_like(self):
        """No scene in common: refused. Duplicate names, another size, other targets: one warning each; another
        model: a note (by content identity where both record it). Two comparable reports: nothing on stderr."""
        def report(name, scenes, size=(32, 48), model="m.safetensors", identity=None):
            path = os.path.join(self.tmp, name + ".json")
            content = {"format": "lact report v1", "psnr": 20.0, "size": list(size), "model": model,
                       "scenes": [{"name": n, "psnr": 20.0, "ssim": 0.5, "targets": t} for n, t in scenes]}
            if identity:
                content["model_identity"] = identity
            with open(path, "w") as f:
                json.dump(content, f)
            return path
        a = report("a", [("x", [3, 4]), ("y", [3, 4])])
        same = lact("eval-compare", a, report("same", [("x", [3, 4]), ("y", [3, 4])]))
        self.assertEqual((same.returncode, same.stderr), (0, ""))
        disjoint = report("disjoint", [("z", [3, 4])])
        self.one_line_error(lact("eval-compare", a, disjoint))
        self.assertIn("no scene in common", lact("eval-compare", a, disjoint).stderr)
        cases = {"dup": ([("x", [3, 4]), ("x", [3, 4])], {}, "two scenes are named 'x'"),
                 "size": ([("x", [3, 4])], {"size": (64, 64)}, "A is at size [32,48] and B at [64,64]"),
                 "targets": ([("x", [5])], {}, "scene 'x' has other target views"),
                 "model": ([("x", [3, 4])], {"model": "other.safetensors"}, "note: A comes from the model")}
        # One file given by two paths is one model (its content identity); one path that held another file is not.
        with_id = report("with_id", [("x", [3, 4])], identity="100:aa")
        one_file = lact("eval-compare", with_id, report("one_file", [("x", [3, 4])], model="/abs/m.safetensors",
                                                         identity="100:aa"))
        self.assertEqual((one_file.returncode, one_file.stderr), (0, ""))
        cases["changed"] = ([("x", [3, 4])], {"identity": "100:bb"}, "name the model m.safetensors, but its file")
        cases["other_id"] = ([("x", [3, 4])], {"model": "n.safetensors", "identity": "100:bb"},
                             "note: A comes from the model")
        for name, (scenes, extra, expected) in cases.items():
            first = with_id if "identity" in extra else a
            r = lact("eval-compare", first, report(name, scenes, **extra))
            lines = r.stderr.strip().splitlines()
            self.assertEqual((r.returncode, len(lines)), (0, 1), name + ": " + r.stderr)
            self.assertIn(expected, lines[0], name)
            self.assertIn("overall psnr", r.stdout, name)
        # A field that is not a number is one line and no table: before, B's scene rows and its first overall lines
        # were printed, then the error (exit 1) at the field.
        for key, value in (("render_ms_per_view", "fast"), ("encode_s_total", None), ("ssim", {})):
            path = report("bad_" + key, [("x", [3, 4])])
            with open(path) as f:
                bad = json.load(f)
            bad.update({"ssim": 0.5, "render_ms_per_view": 7.0, "encode_s_total": 1.0})
            bad[key] = value
            with open(path, "w") as f:
                json.dump(bad, f)
            for first, second in ((a, path), (path, a)):
                r = lact("eval-compare", first, second)
                self.assertIn("bad_%s.json: not a lact report.json (no number '%s')" % (key, key),
                              self.one_line_error(r))
                self.assertEqual(r.stdout, "", key)

    def test_eval_compare_refuses_a_report_of_another_format(self):
        """Before, the `format` field was not read: a JSON that merely had `scenes` and `psnr` (another tool's
        file, a newer lact's report) was compared as a lact report. Now: one line naming the file and the field."""
        def write(name, content):
            path = os.path.join(self.tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(content, f)
            return path
        scenes = [{"name": "x", "psnr": 20.0, "ssim": 0.5}]
        good = write("good", {"format": "lact report v1", "psnr": 20.0, "scenes": scenes})
        self.assertEqual(lact("eval-compare", good, good).returncode, 0)
        cases = {"no_format": ({"psnr": 20.0, "scenes": scenes}, "not a lact report.json (no field 'format'"),
                 "newer": ({"format": "lact report v2", "psnr": 20.0, "scenes": scenes},
                           "field 'format' is 'lact report v2', a report format this lact does not read"),
                 "other_tool": ({"format": "nerfstudio eval", "psnr": 20.0, "scenes": scenes},
                                "field 'format' is 'nerfstudio eval', not a lact report.json"),
                 "number": ({"format": 1, "psnr": 20.0, "scenes": scenes}, "field 'format' is a JSON number"),
                 "list": ([1, 2], "not a lact report.json (no field 'format'")}
        for name, (content, expected) in cases.items():
            path = write(name, content)
            for first, second in ((good, path), (path, good)):
                r = lact("eval-compare", first, second)
                self.assertIn("%s.json: %s" % (name, expected), self.one_line_error(r))
                self.assertEqual(r.stdout, "", name)

    def test_eval_compare_warns_of_an_unfinished_report(self):
        """An interrupted evaluation's report.json ("complete": false) holds the overall means of its finished
        scenes only: compared with a finished run's, its overall rows differed with no word said."""
        def write(name, complete, psnrs):
            path = os.path.join(self.tmp, name + ".json")
            scenes = [{"name": "s%d" % i, "psnr": p, "ssim": 0.5} for i, p in enumerate(psnrs)]
            content = {"format": "lact report v1", "psnr": sum(psnrs) / len(psnrs), "scenes": scenes}
            if complete is not None:
                content["complete"] = complete
            with open(path, "w") as f:
                json.dump(content, f)
            return path
        finished = write("finished", True, [20.0, 30.0])
        unfinished = write("unfinished", False, [20.0])
        old = write("old", None, [20.0, 30.0])  # a report from before the field: finished
        for first, second in ((finished, unfinished), (unfinished, finished)):
            r = lact("eval-compare", first, second)
            lines = r.stderr.strip().splitlines()
            self.assertEqual((r.returncode, len(lines)), (0, 1), r.stderr)
            self.assertIn("unfinished.json is the report of an unfinished run", lines[0])
            self.assertIn("overall psnr", r.stdout)  # still compared
        for first, second in ((finished, old), (old, finished)):
            r = lact("eval-compare", first, second)
            self.assertEqual((r.returncode, r.stderr), (0, ""))

def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--lact", required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--data", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], "-v"] + rest)


if __name__ == "__main__":
    main()
