"""A fisheye capture made here in numpy from the shipped example (OpenCV's fisheye model, written independently of
lact's reader) reads back through lact.read_scene as the example's own pinhole views at the undistorted intrinsics
lact reports: the fisheye reader, its undistortion and the pixel convention checked end to end."""
import json
import os

import numpy as np
from PIL import Image

from conftest import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "gso_toy_64")
LENS = (0.02, -0.005, 0.001, -0.0002)  # k1..k4: theta_d = theta (1 + k1 theta^2 + ... + k4 theta^8)
FOCAL, CENTRE = 52.0, 32.5  # the fisheye's pixels: 64x64, pixel (u, v) centred at (u + 0.5, v + 0.5)


def bilinear(image, sx, sy):
    """image sampled at pixel-index coordinates (sx, sy), clamped to the edge."""
    h, w = image.shape[:2]
    sx, sy = np.clip(sx, 0, w - 1), np.clip(sy, 0, h - 1)
    ix, iy = np.minimum(sx.astype(int), w - 2), np.minimum(sy.astype(int), h - 2)
    tx, ty = (sx - ix)[..., None], (sy - iy)[..., None]
    top = image[iy, ix] * (1 - tx) + image[iy, ix + 1] * tx
    bottom = image[iy + 1, ix] * (1 - tx) + image[iy + 1, ix + 1] * tx
    return top * (1 - ty) + bottom * ty


def theta_of(theta_d):
    """The angle from the axis whose distorted angle is theta_d (Newton on the lens polynomial)."""
    k1, k2, k3, k4 = LENS
    theta = theta_d.copy()
    for _ in range(30):
        t2 = theta * theta
        residual = theta * (1 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4)))) - theta_d
        theta -= residual / (1 + t2 * (3 * k1 + t2 * (5 * k2 + t2 * (7 * k3 + t2 * 9 * k4))))
    return theta


def pinhole_view(frame, x, y):
    """The example's image of `frame` sampled at normalized pinhole coordinates (x, y)."""
    image = np.asarray(Image.open(os.path.join(EXAMPLE, frame["file_path"])).convert("RGB")).astype(np.float64) / 255
    return bilinear(image, frame["fx"] * x + frame["cx"] - 0.5, frame["fy"] * y + frame["cy"] - 0.5)


def write_fisheye_scene(folder, frames):
    """transforms.json (OPENCV_FISHEYE, OpenGL poses) and the fisheye images of `frames`."""
    os.makedirs(os.path.join(folder, "images"))
    v, u = np.mgrid[0:64, 0:64] + 0.5
    xd, yd = (u - CENTRE) / FOCAL, (v - CENTRE) / FOCAL
    theta_d = np.hypot(xd, yd)
    scale = np.tan(theta_of(theta_d)) / np.maximum(theta_d, 1e-12)  # theta_d > 0 at every pixel centre
    out = []
    for i, frame in enumerate(frames):
        name = "images/%03d.png" % i
        fisheye = pinhole_view(frame, xd * scale, yd * scale)
        Image.fromarray(np.clip(fisheye * 255 + 0.5, 0, 255).astype(np.uint8)).save(os.path.join(folder, name))
        c2w = np.linalg.inv(np.array(frame["w2c"])) @ np.diag([1.0, -1.0, -1.0, 1.0])
        out.append({"file_path": name, "transform_matrix": c2w.tolist()})
    k1, k2, k3, k4 = LENS
    with open(os.path.join(folder, "transforms.json"), "w") as f:
        json.dump({"camera_model": "OPENCV_FISHEYE", "fl_x": FOCAL, "fl_y": FOCAL, "cx": CENTRE, "cy": CENTRE,
                   "w": 64, "h": 64, "k1": k1, "k2": k2, "k3": k3, "k4": k4, "frames": out}, f)


def psnr(a, b):
    return -10 * np.log10(np.mean((a - b) ** 2))


def test_a_fisheye_capture_reads_as_the_pinhole_views_it_was_made_from(lact, tmp_path):
    with open(os.path.join(EXAMPLE, "opencv_cameras.json")) as f:
        frames = json.load(f)[:6]
    folder = str(tmp_path / "fisheye")
    write_fisheye_scene(folder, frames)
    scene = lact.read_scene(folder, inputs="0-3", targets="4,5")
    assert scene.images.shape == (6, 64, 64, 3)
    v, u = np.mgrid[0:64, 0:64] + 0.5
    for i, frame in enumerate(frames):
        fx, fy, cx, cy = scene.intrinsics[i]
        assert fx < FOCAL  # the pinhole view inside a fisheye's sides has a shorter focal length
        expected = pinhole_view(frame, (u - cx) / fx, (v - cy) / fy)  # one resampling, straight from the example
        # Two resamplings (here to the fisheye, lact's back) against one: 35-38 dB measured; half a pixel off in
        # either convention gives 28-30 dB, and an undistortion ignoring the lens far less.
        assert psnr(scene.images[i], expected) > 33, (i, psnr(scene.images[i], expected))
        np.testing.assert_allclose(scene.c2w[i], np.linalg.inv(np.array(frame["w2c"])), atol=1e-6)
