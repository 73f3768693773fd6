#!/usr/bin/env python3
"""`lact import` on real photos with the real COLMAP (issue 37): are the recovered cameras right?

36 photos of ../shared/data/mydesk (every 14th, in capture order) are imported without their poses, once as a
folder of photos and once as a video made of 60 consecutive frames (every 3rd photo, H.264) with --frames 30. The
recovered cameras (read from sparse/0/images.bin with this file's own parser) are aligned to the given ones
(opencv_cameras.json: structure-from-motion on the same photos) and then:
  - at least 90% of the images are registered,
  - the median rotation error is at most 1 degree, after the rotation that best aligns the cameras' axes, and
    so is the median error of the relative rotation between two cameras (no alignment needed),
  - the median camera-centre error is at most 2% of the extent (the diagonal of the bounding box of the given
    centres of those images) after the least-squares similarity transform of the centres (Umeyama 1991),
and lact's own COLMAP reader (`lact info --data`) reads the scene with every registered view. Measured numbers
are printed (docs/guide/import.md keeps them).

Usage: PYTHONPATH=tests/common:. python3 tests/reference/import_accuracy_test.py --lact build/app/lact --data ../shared/data
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

from cli_common import parse_cli_args

ARGS = None
COLMAP = shutil.which("colmap")
FFMPEG = shutil.which("ffmpeg")


def read_images_bin(path):
    """{name: (R world-to-camera 3x3, t)} from COLMAP's images.bin."""
    out = {}
    with open(path, "rb") as f:
        (count,) = struct.unpack("<Q", f.read(8))
        for _ in range(count):
            _, qw, qx, qy, qz, tx, ty, tz, _ = struct.unpack("<I7dI", f.read(64))
            name = b""
            while (c := f.read(1)) != b"\0":
                name += c
            (points,) = struct.unpack("<Q", f.read(8))
            f.seek(24 * points, 1)
            q = np.array([qw, qx, qy, qz]) / np.linalg.norm([qw, qx, qy, qz])
            w, x, y, z = q
            r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                          [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                          [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
            out[name.decode()] = (r, np.array([tx, ty, tz]))
    return out


def umeyama(src, dst):
    """s, R, t minimising sum |s R src_i + t - dst_i|^2 (src, dst: N x 3)."""
    mu_s, mu_d = src.mean(0), dst.mean(0)
    xs, xd = src - mu_s, dst - mu_d
    cov = xd.T @ xs / len(src)
    u, d, vt = np.linalg.svd(cov)
    sign = np.eye(3)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[2, 2] = -1
    r = u @ sign @ vt
    s = np.trace(np.diag(d) @ sign) / (xs ** 2).sum(1).mean()
    return s, r, mu_d - s * r @ mu_s


def centre(pose):
    r, t = pose
    return -r.T @ t


def best_rotation(recovered, given, names):
    """The rotation that best carries the recovered cameras' axes onto the given ones (Kabsch: the rotation part
    of Umeyama's solution for the cameras' orientations)."""
    m = sum(given[n][0].T @ recovered[n][0] for n in names)
    u, _, vt = np.linalg.svd(m)
    sign = np.eye(3)
    sign[2, 2] = np.sign(np.linalg.det(u @ vt))
    return u @ sign @ vt


def relative_rotation_errors(recovered, given, names):
    """Degrees between the given and the recovered rotation from camera i to camera j, over all pairs: needs no
    alignment at all."""
    errors = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            d = (given[a][0] @ given[b][0].T).T @ (recovered[a][0] @ recovered[b][0].T)
            errors.append(np.degrees(np.arccos(np.clip((np.trace(d) - 1) / 2, -1, 1))))
    return np.array(errors)


def rotation_errors(recovered, given, names, r_align):
    """Degrees between each given camera's axes and its recovered axes carried by `r_align`."""
    errors = []
    for n in names:
        cos = (np.trace(given[n][0] @ r_align @ recovered[n][0].T) - 1) / 2
        errors.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    return np.array(errors)


def pose_errors(recovered, given):
    """For the registered images: centre errors (fractions of the extent) after the similarity transform
    (Umeyama) of the recovered centres onto the given ones; rotation errors (degrees) after the rotation that
    best aligns the cameras' axes; the rotation errors under the centres' transform instead (printed: over 36
    cameras whose centres fit within 0.4% of the extent, it is uncertain by a degree or so); and the pairwise
    relative rotation errors. recovered / given: {name: (R w2c, t)}."""
    names = sorted(recovered)
    extent = np.linalg.norm(np.array([centre(g) for g in given.values()]).ptp(0))
    c_rec, c_giv = np.array([centre(recovered[n]) for n in names]), np.array([centre(given[n]) for n in names])
    s, r, t = umeyama(c_rec, c_giv)
    centre_err = np.linalg.norm((s * (r @ c_rec.T)).T + t - c_giv, axis=1) / extent
    rot = rotation_errors(recovered, given, names, best_rotation(recovered, given, names))
    return rot, centre_err, rotation_errors(recovered, given, names, r), relative_rotation_errors(recovered, given,
                                                                                                   names)


@unittest.skipUnless(COLMAP, "colmap is not installed (scripts/setup.sh installs it)")
class ImportAccuracy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="lact_import_acc_")
        cls.tmp = cls._tmp.name
        cls.desk = os.path.join(ARGS.data, "mydesk")
        with open(os.path.join(cls.desk, "opencv_cameras.json")) as f:
            frames = json.load(f)["frames"]
        cls.frames = sorted(frames, key=lambda fr: int(os.path.basename(fr["file_path"])[5:-4]))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def import_and_check(self, source, given, extra):
        out = os.path.join(self.tmp, os.path.basename(source) + "-scene")
        start = time.monotonic()
        p = subprocess.run([ARGS.lact, "import", source, "-o", out, "--max-size", "480"] + extra,
                           capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
        seconds = time.monotonic() - start
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        recovered = read_images_bin(os.path.join(out, "sparse", "0", "images.bin"))
        rot, centre_err, rot_by_centres, relative = pose_errors(recovered, given)
        print("\n%s: %d of %d registered; rotation error median %.3f max %.3f deg (under the centres' similarity: "
              "median %.3f; pairwise relative: median %.3f max %.3f); centre error median %.3f%% max %.3f%% of the "
              "extent; %.0f s\n%s" % (os.path.basename(source), len(recovered), len(given), np.median(rot), rot.max(),
                                     np.median(rot_by_centres), np.median(relative), relative.max(),
                                     100 * np.median(centre_err), 100 * centre_err.max(), seconds, p.stdout),
              file=sys.stderr)
        self.assertGreaterEqual(len(recovered), 0.9 * len(given))
        self.assertLessEqual(np.median(rot), 1.0)
        self.assertLessEqual(np.median(relative), 1.0)
        self.assertLessEqual(np.median(centre_err), 0.02)
        info = subprocess.run([ARGS.lact, "info", "--data", out], capture_output=True, text=True)
        self.assertEqual(info.returncode, 0, info.stderr)
        self.assertIn("%d views" % len(recovered), info.stdout)
        return recovered

    @staticmethod
    def pose(frame):
        w2c = np.array(frame["w2c"])
        return w2c[:3, :3], w2c[:3, 3]

    def test_photos(self):
        folder = os.path.join(self.tmp, "photos")
        os.makedirs(folder)
        given = {}
        for frame in self.frames[::14][:36]:
            name = os.path.basename(frame["file_path"])
            shutil.copy(os.path.join(self.desk, frame["file_path"]), os.path.join(folder, name))
            given[name] = self.pose(frame)
        self.import_and_check(folder, given, [])

    @unittest.skipUnless(FFMPEG, "ffmpeg is not installed")
    def test_video(self):
        run = self.frames[:180:3]  # 60 consecutive frames, every 3rd photo
        listing = os.path.join(self.tmp, "frames.txt")
        with open(listing, "w") as f:
            for frame in run:
                f.write("file '%s'\nduration 0.1\n" % os.path.abspath(os.path.join(self.desk, frame["file_path"])))
        video = os.path.join(self.tmp, "desk.mp4")
        subprocess.run([FFMPEG, "-v", "error", "-f", "concat", "-safe", "0", "-i", listing, "-r", "10", "-c:v",
                        "libx264", "-crf", "18", "-pix_fmt", "yuv420p", video], check=True)
        # --frames 30 of 60: window w is frames 2w and 2w+1, and its middle one (2w+1) is taken.
        given = {"frame_%05d.png" % (w + 1): self.pose(run[2 * w + 1]) for w in range(30)}
        self.import_and_check(video, given, ["--frames", "30"])


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__, fixture_required=False)
    if not ARGS.data:
        sys.exit("import_accuracy_test: --data (the shared data folder) is required")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
