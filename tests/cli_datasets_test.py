#!/usr/bin/env python3
"""End-to-end tests of the dataset side of the lact CLI: the four camera layouts, real data, bad input.

Usage: python3 tests/cli_datasets_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
       [--data-root ../shared/data]   (gso_toy, mydesk, gso_sample_index.json; default: FIXTURE/../../data)
Extra arguments go to unittest (e.g. -v, or a test name such as BadInputTest).
Everything the tests write goes to temporary folders.
"""
import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

ARGS = None
W, H = 48, 32
FOCAL = 40.0           # fx = fy, so camera_angle_x alone states it
CX, CY = W / 2, H / 2  # the image centre, which NeRF-synthetic implies
RADIUS = 2.7


def run(*argv):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    return p.returncode, p.stdout, p.stderr


def look_at_c2w(centre):
    """OpenCV camera-to-world (x right, y down, z forward) at `centre` looking at the origin, world z up."""
    c = np.asarray(centre, dtype=np.float64)
    z = -c / np.linalg.norm(c)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = x, y, z, c
    return m


def synthetic_c2w():
    """Four cameras on a sphere of radius RADIUS around the origin, at different azimuths and elevations."""
    cams = []
    for azimuth, elevation in ((0.3, 0.35), (1.4, 0.15), (2.6, 0.5), (4.2, 0.25)):
        centre = RADIUS * np.array([math.cos(elevation) * math.cos(azimuth), math.cos(elevation) * math.sin(azimuth),
                                    math.sin(elevation)])
        cams.append(look_at_c2w(centre))
    return cams


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def lact_frames(c2ws, names):
    return [dict(w=W, h=H, fx=FOCAL, fy=FOCAL, cx=CX, cy=CY, w2c=np.linalg.inv(c2w).tolist(), file_path=name)
            for c2w, name in zip(c2ws, names)]


GL_FROM_CV = np.diag([1.0, -1.0, -1.0, 1.0])


def write_four_layouts(root, images):
    """One 4-view scene written as LaCT list, Long-LRM dict, nerfstudio and NeRF-synthetic; returns the paths."""
    c2ws = synthetic_c2w()
    paths = {}

    def copy_images(folder, names):
        for src, name in zip(images, names):
            dst = os.path.join(folder, name)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)

    names = ["images/%03d.png" % i for i in range(4)]
    # (a) LaCT list
    folder = os.path.join(root, "lact_list")
    copy_images(folder, names)
    write_json(os.path.join(folder, "opencv_cameras.json"), lact_frames(c2ws, names))
    paths["lact"] = os.path.join(folder, "opencv_cameras.json")
    # (b) Long-LRM / converted DL3DV dict
    folder = os.path.join(root, "lact_dict")
    copy_images(folder, names)
    write_json(os.path.join(folder, "opencv_cameras.json"), dict(scene_name="synthetic", frames=lact_frames(c2ws, names)))
    paths["lact-dict"] = os.path.join(folder, "opencv_cameras.json")
    # (c) nerfstudio: OpenGL camera-to-world
    folder = os.path.join(root, "nerfstudio")
    copy_images(folder, names)
    write_json(os.path.join(folder, "transforms.json"),
               dict(camera_model="OPENCV", fl_x=FOCAL, fl_y=FOCAL, cx=CX, cy=CY, w=W, h=H,
                    frames=[dict(file_path=n, transform_matrix=(c2w @ GL_FROM_CV).tolist()) for c2w, n in zip(c2ws, names)]))
    paths["nerfstudio"] = os.path.join(folder, "transforms.json")
    # (d) NeRF-synthetic: camera_angle_x, extensionless file paths, the folder as --data
    folder = os.path.join(root, "nerf_synthetic")
    copy_images(folder, ["train/r_%d.png" % i for i in range(4)])
    write_json(os.path.join(folder, "transforms_train.json"),
               dict(camera_angle_x=2 * math.atan(W / (2 * FOCAL)),
                    frames=[dict(file_path="./train/r_%d" % i, rotation=0.0, transform_matrix=(c2w @ GL_FROM_CV).tolist())
                            for i, c2w in enumerate(c2ws)]))
    paths["nerf-synthetic"] = folder
    return paths


def intrinsics_line(stdout):
    lines = [l.strip() for l in stdout.splitlines() if l.strip().startswith("intrinsics (px):")]
    assert len(lines) == 1, "no single intrinsics line in:\n" + stdout
    return lines[0]


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = os.path.abspath(ARGS.fixture)
        cls.model = os.path.join(cls.fx, "model.safetensors")
        cls.images = [os.path.join(cls.fx, "scene", "images", "%03d.png" % i) for i in range(5)]
        cls._tmp = tempfile.TemporaryDirectory(prefix="lact_cli_datasets_")
        cls.tmp = cls._tmp.name

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def render(self, data, *extra, inputs="0,1", targets="2,3"):
        out = tempfile.mkdtemp(dir=self.tmp)
        rc, so, se = run("render", "--model", self.model, "--data", data, "--inputs", inputs, "--targets", targets,
                         "--save-npy", "--out", out, *extra)
        return rc, so, se, out


class FourLayoutsTest(Base):
    """The acceptance test: one scene in four layouts renders the same pixels."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.paths = write_four_layouts(os.path.join(cls.tmp, "layouts"), cls.images[:4])

    def test_renders_agree(self):
        renders = {}
        for layout, path in self.paths.items():
            rc, so, se, out = self.render(path)
            self.assertEqual(rc, 0, "%s: render failed: %s%s" % (layout, so, se))
            views = []
            for v in (2, 3):
                found = glob.glob(os.path.join(out, "*", "%d.npy" % v))
                self.assertEqual(len(found), 1, "%s: expected one %d.npy under %s, got %s" % (layout, v, out, found))
                views.append(np.load(found[0]))
            renders[layout] = np.stack(views)
            self.assertEqual(renders[layout].shape, (2, H, W, 3), layout)
            self.assertTrue(np.isfinite(renders[layout]).all(), layout)
        reference = renders["lact"]
        # The scene must actually show something that depends on the cameras (not a flat image).
        self.assertGreater(float(reference.std()), 1e-4)
        for layout, r in renders.items():
            diff = float(np.abs(r - reference).max())
            self.assertLessEqual(diff, 1e-5, "%s differs from the LaCT list by %g" % (layout, diff))

    def test_info_reports_same_intrinsics(self):
        lines = {}
        for layout, path in self.paths.items():
            rc, so, se = run("info", "--data", path)
            self.assertEqual(rc, 0, "%s: info failed: %s%s" % (layout, so, se))
            self.assertIn("(%s layout" % layout, so)
            self.assertIn("4 views", so)
            self.assertIn("image sizes (WxH): %dx%d" % (W, H), so)
            lines[layout] = intrinsics_line(so)
        self.assertIn("fx 40..40, fy 40..40, cx 24..24, cy 16..16", lines["lact"])
        for layout, line in lines.items():
            self.assertEqual(line, lines["lact"], layout)

    def test_camera_centres_agree(self):
        # Image-free: the camera bounds `info` prints are the same in every layout.
        centres = {}
        for layout, path in self.paths.items():
            rc, so, se = run("info", "--data", path)
            self.assertEqual(rc, 0, so + se)
            centres[layout] = [l.strip() for l in so.splitlines() if "camera centres:" in l or "distance to" in l]
            self.assertEqual(len(centres[layout]), 2, so)
        for layout, lines in centres.items():
            self.assertEqual(lines, centres["lact"], layout)
        self.assertIn("mean cosine 1.000", centres["lact"][1])  # every camera looks at the origin


class RealDataTest(Base):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.abspath(ARGS.data_root)

    def require(self, path):
        if not os.path.exists(path):
            self.skipTest("%s not present" % path)
        return path

    def test_mydesk_fold8(self):
        folder = self.require(os.path.join(self.data, "mydesk"))
        rc, so, se = run("info", "--data", folder, "--inputs", "fold8", "--targets", "fold8")
        self.assertEqual(rc, 0, so + se)
        self.assertRegex(so, r"scene mydesk \(lact-dict layout, [^)]*\): 498 views")
        self.assertRegex(so, r"(?m)^targets \(63\):")
        self.assertRegex(so, r"(?m)^inputs \(32\):")
        targets = [int(t) for t in next(l for l in so.splitlines() if l.startswith("targets")).split(":")[1].split()]
        self.assertEqual(targets, list(range(0, 498, 8)))

    def test_gso_index(self):
        index = self.require(os.path.join(self.data, "gso_sample_index.json"))
        rc, so, se = run("info", "--data", index)
        self.assertEqual(rc, 0, so + se)
        self.assertIn("1 scene(s)", so)
        self.assertRegex(so, r"camera centres: x -?[0-9.e+-]+\.\.-?[0-9.e+-]+, y .*, z ")
        self.assertRegex(intrinsics_line(so), r"fx [0-9.]+\.\.[0-9.]+, fy .*, cx .*, cy ")


class BadInputTest(Base):
    """Every bad input: exit code 1 and one stderr line "lact: <file>: <problem>"."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.count = 0
        cls.good = write_four_layouts(os.path.join(cls.tmp, "good"), cls.images[:4])

    def scene_folder(self, images=4):
        """A fresh folder with images/000.png ... copied from the fixture."""
        BadInputTest.count += 1
        folder = os.path.join(self.tmp, "bad%02d" % self.count)
        os.makedirs(os.path.join(folder, "images"))
        for i in range(images):
            shutil.copyfile(self.images[i], os.path.join(folder, "images", "%03d.png" % i))
        return folder

    def lact_scene(self, edit=None, images=4):
        """A LaCT list opencv_cameras.json of the synthetic scene; `edit(frames)` changes it first."""
        folder = self.scene_folder(images)
        frames = lact_frames(synthetic_c2w(), ["images/%03d.png" % i for i in range(4)])
        if edit:
            edit(frames)
        path = os.path.join(folder, "opencv_cameras.json")
        write_json(path, frames)
        return path

    def transforms_scene(self, edit=None):
        folder = self.scene_folder()
        obj = dict(fl_x=FOCAL, fl_y=FOCAL, cx=CX, cy=CY, w=W, h=H,
                   frames=[dict(file_path="images/%03d.png" % i, transform_matrix=(c2w @ GL_FROM_CV).tolist())
                           for i, c2w in enumerate(synthetic_c2w())])
        if edit:
            edit(obj)
        path = os.path.join(folder, "transforms.json")
        write_json(path, obj)
        return path

    def assert_one_line_error(self, result, *needles):
        rc, so, se = result[:3]
        context = "rc %d\nstdout: %r\nstderr: %r" % (rc, so, se)
        for bad in ("Traceback", "terminate called", "what():", "Aborted", "Segmentation", "AddressSanitizer"):
            self.assertNotIn(bad, se, context)
        self.assertEqual(rc, 1, context)
        lines = se.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, "expected one stderr line\n" + context)
        self.assertTrue(lines[0].startswith("lact: "), context)
        for needle in needles:
            self.assertIn(needle, lines[0], context)
        return lines[0]

    # --- images -----------------------------------------------------------------------------------------------
    def test_missing_image(self):
        def edit(frames):
            frames[1]["file_path"] = "images/missing.png"
        path = self.lact_scene(edit)
        self.assert_one_line_error(self.render(path), "missing.png")

    def test_corrupt_image(self):
        path = self.lact_scene()
        with open(os.path.join(os.path.dirname(path), "images", "001.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\nthis is not a png")
        self.assert_one_line_error(self.render(path), "001.png")

    def test_corrupt_image_size_read(self):
        # Without w/h the size comes from the image header; a corrupt image must name the camera file or image.
        def edit(frames):
            for f in frames:
                del f["w"], f["h"]
        path = self.lact_scene(edit)
        with open(os.path.join(os.path.dirname(path), "images", "002.png"), "wb") as f:
            f.write(b"not an image, no known magic bytes")
        self.assert_one_line_error(run("info", "--data", path), "002.png")

    # --- camera files -----------------------------------------------------------------------------------------
    def test_corrupt_json(self):
        path = self.lact_scene()
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text[: len(text) // 2])
        self.assert_one_line_error(run("info", "--data", path), path)
        self.assert_one_line_error(self.render(path), path)

    def test_missing_fx(self):
        def edit(frames):
            del frames[2]["fx"]
        path = self.lact_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "'fx'", "frame 2")

    def test_missing_file_path(self):
        def edit(frames):
            del frames[0]["file_path"]
        path = self.lact_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "'file_path'")

    def test_missing_transform_matrix(self):
        def edit(obj):
            del obj["frames"][1]["transform_matrix"]
        path = self.transforms_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "'transform_matrix'", "frame 1")

    def test_missing_transform_matrix_first_frame(self):
        # The first frame decides the layout; a transforms.json must still be read as one.
        def edit(obj):
            del obj["frames"][0]["transform_matrix"]
        path = self.transforms_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "'transform_matrix'")

    def test_missing_transforms_file_path(self):
        def edit(obj):
            del obj["frames"][3]["file_path"]
        path = self.transforms_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "'file_path'")

    def test_non_invertible_w2c(self):
        def edit(frames):
            frames[1]["w2c"] = [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 1]]
        path = self.lact_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "'w2c'")

    def test_nan_pose(self):
        # Python writes NaN, which is not JSON: the reader reports corrupt JSON, naming the file.
        def edit(obj):
            obj["frames"][1]["transform_matrix"][0][3] = float("nan")
        path = self.transforms_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path)

    def test_nan_pose_lact(self):
        def edit(frames):
            frames[0]["w2c"][2][3] = float("nan")
        path = self.lact_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path)

    def test_overflowing_number_pose(self):
        path = self.transforms_scene()
        with open(path) as f:
            obj = json.load(f)
        obj["frames"][2]["transform_matrix"][1][3] = "OVERFLOW"
        with open(path, "w") as f:
            f.write(json.dumps(obj).replace('"OVERFLOW"', "1e999"))
        self.assert_one_line_error(run("info", "--data", path), path)

    def test_overflowing_size(self):
        def edit(frames):
            frames[0]["w"] = 1e300
        path = self.lact_scene(edit)
        self.assert_one_line_error(run("info", "--data", path), path, "frame 0")

    def test_file_name_too_long(self):
        # A file_path the OS refuses (a component over NAME_MAX): `info` only describes the cameras (exit 0);
        # rendering names the image it cannot read.
        name = "a" * 300 + ".png"
        def edit(obj):
            obj["frames"][0]["file_path"] = "images/" + name
        path = self.transforms_scene(edit)
        self.assertEqual(run("info", "--data", path)[0], 0)
        self.assert_one_line_error(self.render(path), name)

    def test_different_sizes(self):
        def edit(frames):
            frames[1]["w"], frames[1]["h"], frames[1]["cx"], frames[1]["cy"] = 64, 48, 32.0, 24.0
        path = self.lact_scene(edit)
        self.assert_one_line_error(self.render(path), path)

    def test_empty_scene(self):
        folder = self.scene_folder(0)
        path = os.path.join(folder, "opencv_cameras.json")
        write_json(path, dict(scene_name="empty", frames=[]))
        self.assert_one_line_error(run("info", "--data", path), path)
        write_json(path, [])
        self.assert_one_line_error(run("info", "--data", path), path)
        path = self.transforms_scene(lambda obj: obj.update(frames=[]))
        self.assert_one_line_error(run("info", "--data", path), path)

    def assert_index_error(self, result, index, entry):
        """An index with a bad entry: one stderr line naming the index or the entry; the entry named somewhere."""
        line = self.assert_one_line_error(result)
        self.assertTrue(index in line or entry in line, "neither %s nor %s named in %r" % (index, entry, line))
        self.assertIn(entry, result[1] + result[2])

    def test_index_entry_is_a_folder(self):
        # An index entry naming a scene folder instead of its camera file: read it, or say which entry failed.
        index = os.path.join(self.tmp, "index_folder.json")
        entry = os.path.relpath(os.path.dirname(self.good["lact"]), self.tmp)
        write_json(index, [entry])
        for result in (run("info", "--data", index), self.render(index)[:3]):
            if result[0] != 0:
                self.assert_index_error(result, index, entry)

    def test_index_missing_entry(self):
        index = os.path.join(self.tmp, "index_missing.txt")
        with open(index, "w") as f:
            f.write("nowhere/opencv_cameras.json\n")
        for result in (run("info", "--data", index), self.render(index)[:3]):
            self.assert_index_error(result, index, "nowhere/opencv_cameras.json")

    # --- flags ------------------------------------------------------------------------------------------------
    def test_size_not_divisible(self):
        self.assert_one_line_error(self.render(self.good["lact"], "--size", "30x44"), "--size", "30x44")

    def test_inputs_out_of_range(self):
        self.assert_one_line_error(self.render(self.good["lact"], inputs="0,9"), self.good["lact"], "--inputs", "9")

    def test_targets_out_of_range(self):
        self.assert_one_line_error(self.render(self.good["lact"], targets="2,7"), self.good["lact"], "--targets", "7")

    def test_inputs_more_than_views(self):
        self.assert_one_line_error(self.render(self.good["nerfstudio"], inputs="uniform:99"), "--inputs", "uniform:99")

    def test_bad_background(self):
        self.assert_one_line_error(self.render(self.good["lact"], "--background", "purple"), "--background", "purple")

    def test_bad_normalize_poses(self):
        self.assert_one_line_error(self.render(self.good["lact"], "--normalize-poses", "sideways"), "--normalize-poses",
                                   "sideways")

    def test_missing_data(self):
        missing = os.path.join(self.tmp, "no_such_scene")
        self.assert_one_line_error(run("info", "--data", missing), missing)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lact", required=True, help="the lact executable")
    parser.add_argument("--fixture", required=True, help="the lact_tiny fixture folder")
    parser.add_argument("--data-root", help="folder with mydesk/ and gso_sample_index.json (default FIXTURE/../../data)")
    ARGS, rest = parser.parse_known_args()
    ARGS.lact = os.path.abspath(ARGS.lact)
    if ARGS.data_root is None:
        ARGS.data_root = os.path.join(os.path.abspath(ARGS.fixture), "..", "..", "data")
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
