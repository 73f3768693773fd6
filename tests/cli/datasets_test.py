#!/usr/bin/env python3
"""End-to-end tests of the dataset side of the lact CLI: the camera layouts, COLMAP models, real data, bad input.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/datasets_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
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
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from cli_common import FixtureCase, use_fixture
from cli_common import ROOT as REPO

ARGS = None
CONVERT_TO_COLMAP = os.path.join(REPO, "tools", "convert_to_colmap.py")
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


class Base(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.images = [os.path.join(cls.fx, "scene", "images", "%03d.png" % i) for i in range(5)]

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
            self.assertIn("image sizes (HxW, as every size flag): %dx%d" % (H, W), so)  # HxW everywhere
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


class SceneFilesCase(Base):
    """Scenes written for one test each, and the check of a one-line refusal."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.count = 0
        cls.good = write_four_layouts(os.path.join(cls.tmp, "good"), cls.images[:4])

    def scene_folder(self, images=4):
        """A fresh folder with images/000.png ... copied from the fixture."""
        type(self).count += 1
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


class BadInputTest(SceneFilesCase):
    """Every bad input: exit code 1 and one stderr line "lact: <file>: <problem>"."""

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
        self.assert_one_line_error(run("info", "--data", path), path, "NaN and Infinity are not JSON")

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


class UsersFilesTest(SceneFilesCase):
    """Files as users' tools write them, and their usual mistakes: read right, or warned about by name."""

    def transforms_without_size(self, downscaled_only=False):
        """A nerfstudio file stating fl_x, cx, cy but no w/h (as instant-ngp writes), with images_2/ beside
        images/ (or in place of it), PIL's box-filtered halves."""
        from PIL import Image
        path = self.transforms_scene(lambda obj: (obj.pop("w"), obj.pop("h")))
        folder = os.path.dirname(path)
        os.makedirs(os.path.join(folder, "images_2"))
        for i in range(4):
            image = Image.open(os.path.join(folder, "images", "%03d.png" % i))
            image.resize((W // 2, H // 2), Image.BOX).save(os.path.join(folder, "images_2", "%03d.png" % i))
        if downscaled_only:
            shutil.rmtree(os.path.join(folder, "images"))
        return path

    def assert_same_renders(self, a, b):
        """Two render() results, each of one scene: both ran, and gave the same two target images."""
        self.assertEqual((a[0], b[0]), (0, 0), a[2] + b[2])
        images = [[np.load(f) for f in sorted(glob.glob(os.path.join(r[3], "*", "*.npy")))] for r in (a, b)]
        self.assertEqual([len(x) for x in images], [2, 2])
        for x, y in zip(*images):
            np.testing.assert_array_equal(x, y)

    def test_downscaled_copy_without_stated_size(self):
        # The intrinsics are the full-size image's: read with --downscale 2, the images_2 copy must get them
        # halved, from the full-size header or (the copy alone shipped) from the copy's size times 2. Before, the
        # copy's own size was taken as the stated one, the full-size fl_x and cx kept: fx 40 on a 24x16 image.
        stated = self.transforms_scene()
        folder = os.path.dirname(stated)
        shutil.copytree(os.path.dirname(self.transforms_without_size()) + "/images_2", folder + "/images_2")
        for path in (self.transforms_without_size(), self.transforms_without_size(downscaled_only=True)):
            rc, so, _ = run("info", "--data", path, "--downscale", "2")
            self.assertEqual(rc, 0, so)
            self.assertIn("image sizes (HxW, as every size flag): %dx%d" % (H, W), so)
            self.assert_same_renders(self.render(stated, "--downscale", "2"), self.render(path, "--downscale", "2"))

    def test_frames_in_file_path_order(self):
        # nerfstudio sorts a transforms.json's frames by file_path: view i is the same view listed in any order.
        ordered = self.transforms_scene()
        shuffled = self.transforms_scene(lambda obj: obj["frames"].reverse())
        rc, so, _ = run("info", "--data", shuffled)
        self.assertIn("views in file_path order, as nerfstudio takes them", so)
        self.assertNotIn("file_path order", run("info", "--data", ordered)[1])
        self.assert_same_renders(self.render(ordered), self.render(shuffled))

    def assert_warned(self, path, needle):
        rc, so, _ = run("info", "--data", path)
        self.assertEqual(rc, 0, so)
        self.assertIn("  warning: ", so)
        self.assertIn(needle, so)
        rc, _, se, _ = self.render(path)
        self.assertEqual(rc, 0, se)
        self.assertIn("lact: warning: ", se)
        self.assertIn(needle, se)

    def test_stated_mistakes_warned(self):
        def normalised(frames):
            for f in frames:
                f["fx"], f["fy"], f["cx"], f["cy"] = FOCAL / W, FOCAL / H, 0.5, 0.5
        self.assert_warned(self.lact_scene(normalised), "focal lengths in normalised units?")

        def from_centre(frames):
            for f in frames:
                f["cx"], f["cy"] = 0.0, 0.0
        self.assert_warned(self.lact_scene(from_centre), "measured from the centre, or in normalised units?")

        def inverted(frames):  # camera-to-world written in the w2c field: an orbit's all read as one point
            for f in frames:
                f["w2c"] = np.linalg.inv(np.array(f["w2c"])).tolist()
        self.assert_warned(self.lact_scene(inverted), "world-to-camera matrices given as camera-to-world")
        rc, so, _ = run("info", "--data", self.lact_scene())
        self.assertNotIn("warning", so)

    def test_rounded_rotations(self):
        # Rounded to 3 decimals (R^T R off I by up to 1.7e-3) is read; to 2 is refused, saying why it may be.
        def rounded(decimals):
            def edit(obj):
                for f in obj["frames"]:
                    f["transform_matrix"] = np.round(np.array(f["transform_matrix"]), decimals).tolist()
            return edit
        self.assertEqual(run("info", "--data", self.transforms_scene(rounded(3)))[0], 0)
        path = self.transforms_scene(rounded(2))
        self.assert_one_line_error(run("info", "--data", path), "not a camera rotation (written with too few decimals?")

    def test_missing_images_hinted(self):
        def upper_case(frames):
            frames[2]["file_path"] = "images/002.PNG"
        path = self.lact_scene(upper_case)
        rc, so, _ = run("info", "--data", path)
        self.assertIn("images: 1 of 4 missing, the first %s" % os.path.join(os.path.dirname(path), "images", "002.PNG"), so)
        self.assertIn("(there is 002.png: the names differ in letter case)", so)
        self.assert_one_line_error(self.render(path), "002.PNG: cannot open file (no such file) (there is 002.png")

        def backslashes(frames):
            frames[0]["file_path"] = "images\\000.png"
        self.assert_one_line_error(self.render(self.lact_scene(backslashes)), "the name holds backslashes")
        path = self.transforms_without_size(downscaled_only=True)
        self.assert_one_line_error(self.render(path), "no 'w'/'h'", "images_2/ is there: pass --downscale 2")

    def test_exif_turned_image(self):
        from PIL import Image
        path = self.lact_scene()
        image = os.path.join(os.path.dirname(path), "images", "001.png")
        Image.open(image).transpose(Image.Transpose.ROTATE_90).save(image)
        self.assert_one_line_error(self.render(path), "image is %dx%d but its camera is for %dx%d: " % (W, H, H, W),
                                   "EXIF orientation")


def to_colmap(scene_file, out, fmt):
    """tools/convert_to_colmap.py: `scene_file` as OUT/sparse/0 (binary or text) with OUT/images linked."""
    p = subprocess.run([sys.executable, CONVERT_TO_COLMAP, scene_file, out, "--format", fmt], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def rays(frames):
    """Ray origins and directions (float64) of camera-path frames, as the engine computes them."""
    out = []
    for f in frames:
        c2w = np.array(f["c2w"], dtype=np.float64)
        u, v = np.meshgrid(np.arange(f["w"]) + 0.5, np.arange(f["h"]) + 0.5)
        d = np.stack([(u - f["cx"]) / f["fx"], (v - f["cy"]) / f["fy"], np.ones_like(u)], -1) @ c2w[:3, :3].T
        d /= np.linalg.norm(d, axis=-1, keepdims=True)
        out.append(np.concatenate([np.broadcast_to(c2w[:3, 3], d.shape), d], -1))
    return np.stack(out)


class ColmapTest(Base):
    """The same scene as a COLMAP model (binary and text, written by tools/convert_to_colmap.py) and in the LaCT
    layout: the same cameras and rays (<= 1e-5), identical ground-truth pixels, equal renders and PSNR."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.abspath(ARGS.data_root)
        cls.gso64 = os.path.join(REPO, "examples", "gso_toy_64", "opencv_cameras.json")

    def convert(self, name, scene_file):
        if not os.path.exists(scene_file):
            self.skipTest("%s not present" % scene_file)
        return {fmt: to_colmap(scene_file, os.path.join(self.tmp, "%s_%s" % (name, fmt)), fmt) for fmt in ("bin", "txt")}

    def render_views(self, data, inputs, targets, *extra):
        rc, so, se, out = self.render(data, "--save-images", *extra, inputs=",".join(map(str, inputs)),
                                      targets=",".join(map(str, targets)))
        self.assertEqual(rc, 0, "%s: %s%s" % (data, so, se))
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        views = {}
        for t in targets:
            npy = glob.glob(os.path.join(out, "*", "%d.npy" % t))
            gt = glob.glob(os.path.join(out, "*", "%d_gt.png" % t))
            self.assertEqual((len(npy), len(gt)), (1, 1), out)
            with open(gt[0], "rb") as f:
                views[t] = (np.load(npy[0]), f.read())
        return views, report

    def path_cameras(self, data, inputs, keys, *extra):
        """The cameras of `keys` as `lact path interpolate` writes them (working size, poses normalised)."""
        out = os.path.join(tempfile.mkdtemp(dir=self.tmp), "path.json")
        rc, so, se = run("path", "interpolate", "--data", data, "--inputs", ",".join(map(str, inputs)), "--keys",
                         ",".join(map(str, keys)), "--frames", len(keys), "-o", out, *extra)
        self.assertEqual(rc, 0, so + se)
        with open(out) as f:
            return json.load(f)["frames"]

    def compare(self, name, lact, colmap, index, inputs, targets, *extra):
        """Renders `inputs` -> `targets` (LaCT indices; `index` maps them to the COLMAP model's) from both and
        compares; returns the numbers."""
        reference, ref_report = self.render_views(lact, inputs, targets, *extra)
        ref_rays = rays(self.path_cameras(lact, inputs, inputs + targets, *extra))
        for fmt, data in colmap.items():
            views, report = self.render_views(data, [index[i] for i in inputs], [index[t] for t in targets], *extra)
            render_diff = max(float(np.abs(views[index[t]][0] - reference[t][0]).max()) for t in targets)
            same_gt = all(views[index[t]][1] == reference[t][1] for t in targets)
            mapped = [index[i] for i in inputs]
            ray_diff = float(np.abs(rays(self.path_cameras(data, mapped, mapped + [index[t] for t in targets], *extra)) -
                                    ref_rays).max())
            psnr, ref_psnr = report["scenes"][0]["psnr"], ref_report["scenes"][0]["psnr"]
            sys.stderr.write("\n%s COLMAP %s vs LaCT layout %s: max ray difference %.3g, ground truth PNGs identical: %s, "
                             "max render difference %.3g, PSNR %.6f vs %.6f\n"
                             % (name, fmt, " ".join(extra), ray_diff, same_gt, render_diff, psnr, ref_psnr))
            self.assertLessEqual(ray_diff, 1e-5, fmt)
            self.assertTrue(same_gt, fmt)
            self.assertLessEqual(render_diff, 1e-5, fmt)
            self.assertAlmostEqual(psnr, ref_psnr, places=4)

    def test_gso_toy_64(self):
        colmap = self.convert("gso64", self.gso64)
        self.compare("gso_toy_64", self.gso64, colmap, {i: i for i in range(64)}, [0, 16, 20, 34, 46], [8, 24, 40])
        for fmt, data in colmap.items():
            rc, so, se = run("info", "--data", data)
            self.assertEqual(rc, 0, so + se)
            self.assertIn("(colmap layout", so)
            self.assertIn("64 views", so)
            self.assertIn("(%s): 1 camera(s) in use: 1 PINHOLE" % ("binary" if fmt == "bin" else "text"), so)
            self.assertIn("images: 64 registered, 0 unregistered", so)
            self.assertEqual(intrinsics_line(so), intrinsics_line(run("info", "--data", self.gso64)[1]))

    def test_gso_toy_shared(self):
        scene = os.path.join(self.data, "gso_toy", "opencv_cameras.json")
        colmap = self.convert("gso", scene)
        self.compare("gso_toy", scene, colmap, {i: i for i in range(64)}, [0, 16, 20, 34], [8, 40], "--size", "64x64")

    def test_mydesk(self):
        scene = os.path.join(self.data, "mydesk", "opencv_cameras.json")
        colmap = self.convert("mydesk", scene)
        with open(scene) as f:
            names = [os.path.basename(fr["file_path"]) for fr in json.load(f)["frames"]]
        # COLMAP views come sorted by image name; the LaCT file is in frame order.
        index = {i: sorted(names).index(n) for i, n in enumerate(names)}
        inputs, targets = [3, 61, 122, 190, 251, 317, 380, 449], [0, 8, 248, 496]
        for normalize in ("inputs", "all"):
            self.compare("mydesk", scene, colmap, index, inputs, targets, "--size", "128x224", "--normalize-poses",
                         normalize)
        rc, so, se = run("info", "--data", colmap["bin"])
        self.assertEqual(rc, 0, so + se)
        self.assertIn("images: 498 registered, 0 unregistered", so)

    def test_distortion_as_nerfstudio(self):
        """k1 k2 p1 p2 in transforms.json and the same cameras as a COLMAP OPENCV model: same undistorted views."""
        folder = os.path.join(self.tmp, "distorted")
        names = ["images/%03d.png" % i for i in range(4)]
        for src, name in zip(self.images, names):
            os.makedirs(os.path.join(folder, "images"), exist_ok=True)
            shutil.copyfile(src, os.path.join(folder, name))
        scene = os.path.join(folder, "transforms.json")
        write_json(scene, dict(camera_model="OPENCV", fl_x=FOCAL, fl_y=FOCAL + 0.5, cx=CX + 0.25, cy=CY - 0.5, w=W, h=H,
                               k1=-0.12, k2=0.03, p1=1e-3, p2=-6e-4,
                               frames=[dict(file_path=n, transform_matrix=(c2w @ GL_FROM_CV).tolist())
                                       for c2w, n in zip(synthetic_c2w(), names)]))
        colmap = self.convert("distorted", scene)
        reference, ref_report = self.render_views(scene, [0, 1], [2, 3])
        ref_info = run("info", "--data", scene)[1]
        for fmt, data in colmap.items():
            views, report = self.render_views(data, [0, 1], [2, 3])
            diff = max(float(np.abs(views[t][0] - reference[t][0]).max()) for t in (2, 3))
            same = all(views[t][1] == reference[t][1] for t in (2, 3))
            info = run("info", "--data", data)[1]
            sys.stderr.write("\ndistorted (k1 k2 p1 p2) COLMAP OPENCV %s vs transforms.json: undistorted ground truth "
                             "identical: %s, max render difference %.3g, %s\n" % (fmt, same, diff, intrinsics_line(info)))
            self.assertTrue(same, fmt)
            self.assertLessEqual(diff, 1e-6, fmt)
            self.assertEqual(intrinsics_line(info), intrinsics_line(ref_info))
            self.assertIn("lens distortion (k1 k2 p1 p2) in 4 views", info)
            self.assertIn("1 camera(s) in use: 1 OPENCV", info)

    def test_unregistered_images_counted(self):
        root = to_colmap(self.gso64, os.path.join(self.tmp, "unregistered"), "bin")
        shutil.copyfile(os.path.join(REPO, "examples", "gso_toy_64", "000.png"), os.path.join(root, "images", "extra.png"))
        rc, so, se = run("info", "--data", root)
        self.assertEqual(rc, 0, so + se)
        self.assertIn("images: 64 registered, 1 unregistered", so)

    def test_bad_models_one_line_errors(self):
        root = to_colmap(self.gso64, os.path.join(self.tmp, "bad_bin"), "bin")
        images = os.path.join(root, "sparse", "0", "images.bin")
        with open(images, "rb") as f:
            data = f.read()
        with open(images, "wb") as f:  # truncated: the count no longer fits
            f.write(data[:200])
        BadInputTest.assert_one_line_error(self, run("info", "--data", root), images, "the image count 64 cannot fit")
        with open(images, "wb") as f:  # a NaN quaternion in record 2 (records of 80 bytes after the count)
            f.write(data[:8 + 2 * 80 + 4] + struct.pack("<d", float("nan")) + data[8 + 2 * 80 + 12:])
        BadInputTest.assert_one_line_error(self, self.render(root), images,
                                           "image record 2 of 64 ('002.png'): field 'qvec' holds NaN or infinity")
        root = to_colmap(self.gso64, os.path.join(self.tmp, "bad_txt"), "txt")
        cameras = os.path.join(root, "sparse", "0", "cameras.txt")
        with open(cameras) as f:
            text = f.read()
        with open(cameras, "w") as f:
            f.write(text.replace("PINHOLE 64 64", "FOV 64 64").replace(" 32.0 32.0", " 32.0 32.0 0.1"))
        BadInputTest.assert_one_line_error(self, self.render(root), cameras, "uses the FOV model")
        BadInputTest.assert_one_line_error(self, run("info", "--data", self.gso64, "--images", root), "--images")

    def test_model_in_sparse_1_named(self):
        root = to_colmap(self.gso64, os.path.join(self.tmp, "sparse_1"), "bin")
        os.rename(os.path.join(root, "sparse", "0"), os.path.join(root, "sparse", "1"))
        BadInputTest.assert_one_line_error(self, run("info", "--data", root), "sparse/1 holds one",
                                           "pass --data %s/sparse/1 --images %s/images" % (root, root))


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lact", required=True, help="the lact executable")
    parser.add_argument("--fixture", required=True, help="the lact_tiny fixture folder")
    parser.add_argument("--data-root", help="folder with mydesk/ and gso_sample_index.json (default FIXTURE/../../data)")
    ARGS, rest = parser.parse_known_args()
    use_fixture(ARGS.fixture)
    ARGS.lact = os.path.abspath(ARGS.lact)
    if ARGS.data_root is None:
        ARGS.data_root = os.path.join(os.path.abspath(ARGS.fixture), "..", "..", "data")
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
