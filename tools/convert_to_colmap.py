#!/usr/bin/env python3
"""Writes a posed image set as a COLMAP sparse model (the layout `lact --data` reads as COLMAP's own output).

    python3 tools/convert_to_colmap.py SCENE OUT [--format bin|txt] [--images link|copy|none]

SCENE is a LaCT / Long-LRM `opencv_cameras.json` (a list of frames, or a dict with `frames`: w, h, fx, fy, cx, cy,
OpenCV world-to-camera `w2c`, `file_path`) or a nerfstudio `transforms.json` (fl_x, fl_y, cx, cy, w, h, k1, k2, p1,
p2, top level or per frame; OpenGL camera-to-world `transform_matrix`; `applied_transform` undone, as lact does).
OUT gets sparse/0/{cameras,images,points3D}.{bin|txt} and images/ (symbolic links to the originals, copies, or
nothing). Frames with equal intrinsics share a camera: PINHOLE, or OPENCV when k1 k2 p1 p2 are not all zero.
Image names are the files' base names (their paths under the scene's folder when base names repeat); lact sorts
views by name, so view i here is the i-th name in byte order, not necessarily frame i of SCENE.

The standard library only (no numpy): poses are 4x4 lists, inverted with partial pivoting, and the rotation goes
into a unit quaternion (qw >= 0) by the largest-diagonal method. Used by tests/cli/datasets_test.py.
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys

MODEL_IDS = {"PINHOLE": 1, "OPENCV": 4}


def fail(message):
    sys.exit("convert_to_colmap: " + message)


def invert4(m):
    """The inverse of a 4x4 matrix (lists of rows) by Gauss-Jordan elimination with partial pivoting."""
    a = [list(map(float, row)) + [1.0 if i == j else 0.0 for j in range(4)] for i, row in enumerate(m)]
    for col in range(4):
        pivot = max(range(col, 4), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12:
            raise ValueError("singular matrix")
        a[col], a[pivot] = a[pivot], a[col]
        p = a[col][col]
        a[col] = [v / p for v in a[col]]
        for r in range(4):
            if r != col and a[r][col] != 0.0:
                f = a[r][col]
                a[r] = [v - f * w for v, w in zip(a[r], a[col])]
    return [row[4:] for row in a]


def matmul4(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(4)) for j in range(4)] for i in range(4)]


def as4x4(m, what):
    if not isinstance(m, list) or len(m) not in (3, 4) or any(not isinstance(r, list) or len(r) != 4 for r in m):
        fail("%s must be a 3x4 or 4x4 matrix" % what)
    rows = [[float(v) for v in r] for r in m]
    return rows + [[0.0, 0.0, 0.0, 1.0]] if len(rows) == 3 else rows


def quaternion(r, what):
    """(qw, qx, qy, qz) of the rotation matrix r (3x3 rows), qw >= 0; refuses a matrix that is not a rotation."""
    for i in range(3):
        for j in range(3):
            dot = sum(r[k][i] * r[k][j] for k in range(3))
            if abs(dot - (1.0 if i == j else 0.0)) > 1e-5:
                fail("%s: the rotation is not orthonormal (scaled poses cannot be a COLMAP model)" % what)
    trace = r[0][0] + r[1][1] + r[2][2]
    if trace > 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = [0.25 * s, (r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s]
    elif r[0][0] > r[1][1] and r[0][0] > r[2][2]:
        s = 2.0 * math.sqrt(1.0 + r[0][0] - r[1][1] - r[2][2])
        q = [(r[2][1] - r[1][2]) / s, 0.25 * s, (r[0][1] + r[1][0]) / s, (r[0][2] + r[2][0]) / s]
    elif r[1][1] > r[2][2]:
        s = 2.0 * math.sqrt(1.0 + r[1][1] - r[0][0] - r[2][2])
        q = [(r[0][2] - r[2][0]) / s, (r[0][1] + r[1][0]) / s, 0.25 * s, (r[1][2] + r[2][1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2][2] - r[0][0] - r[1][1])
        q = [(r[1][0] - r[0][1]) / s, (r[0][2] + r[2][0]) / s, (r[1][2] + r[2][1]) / s, 0.25 * s]
    n = math.sqrt(sum(v * v for v in q))
    q = [v / n for v in q]
    return [-v for v in q] if q[0] < 0 else q


def lact_frames(obj, folder):
    """(file, intrinsics, w2c) per frame of a LaCT list / Long-LRM dict."""
    frames = obj["frames"] if isinstance(obj, dict) else obj
    out = []
    for i, f in enumerate(frames):
        try:
            k = (int(f["w"]), int(f["h"]), float(f["fx"]), float(f["fy"]), float(f["cx"]), float(f["cy"]), 0.0, 0.0,
                 0.0, 0.0)
            out.append((os.path.join(folder, f["file_path"]), k, as4x4(f["w2c"], "frame %d w2c" % i)))
        except (KeyError, TypeError, ValueError) as e:
            fail("frame %d: %s (needs w, h, fx, fy, cx, cy, w2c, file_path)" % (i, e))
    return out


def transforms_frames(obj, folder):
    """(file, intrinsics, w2c) per frame of a nerfstudio transforms.json, in the reconstruction's own world."""
    world = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]
    if "applied_transform" in obj:
        world = invert4(as4x4(obj["applied_transform"], "applied_transform"))
    out = []
    for i, f in enumerate(obj["frames"]):
        def get(key, default=None):
            value = f.get(key, obj.get(key, default))
            if value is None:
                fail("frame %d: no '%s' (top level or per frame)" % (i, key))
            return value
        fx = float(get("fl_x"))
        k = (int(get("w")), int(get("h")), fx, float(get("fl_y", fx)), float(get("cx")), float(get("cy")),
             float(get("k1", 0.0)), float(get("k2", 0.0)), float(get("p1", 0.0)), float(get("p2", 0.0)))
        gl = matmul4(world, as4x4(f["transform_matrix"], "frame %d transform_matrix" % i))
        c2w = [[row[0], -row[1], -row[2], row[3]] for row in gl]  # OpenGL -> OpenCV camera axes
        out.append((os.path.join(folder, f["file_path"]), k, invert4(c2w)))
    return out


def image_names(files, folder):
    bases = [os.path.basename(f) for f in files]
    if len(set(bases)) == len(bases):
        return bases
    return [os.path.relpath(f, folder).replace(os.sep, "/") for f in files]


def write_binary(sparse, cameras, images):
    with open(os.path.join(sparse, "cameras.bin"), "wb") as f:
        f.write(struct.pack("<Q", len(cameras)))
        for cid, (model, w, h, params) in cameras.items():
            f.write(struct.pack("<IiQQ", cid, MODEL_IDS[model], w, h))
            f.write(struct.pack("<%dd" % len(params), *params))
    with open(os.path.join(sparse, "images.bin"), "wb") as f:
        f.write(struct.pack("<Q", len(images)))
        for iid, q, t, cid, name in images:
            f.write(struct.pack("<I7dI", iid, *q, *t, cid))
            f.write(name.encode("utf-8") + b"\0")
            f.write(struct.pack("<Q", 0))  # no 2D points
    with open(os.path.join(sparse, "points3D.bin"), "wb") as f:
        f.write(struct.pack("<Q", 0))


def write_text(sparse, cameras, images):
    with open(os.path.join(sparse, "cameras.txt"), "w") as f:
        f.write("# Camera list with one line of data per camera:\n#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n")
        f.write("# Number of cameras: %d\n" % len(cameras))
        for cid, (model, w, h, params) in cameras.items():
            f.write("%d %s %d %d %s\n" % (cid, model, w, h, " ".join(repr(p) for p in params)))
    with open(os.path.join(sparse, "images.txt"), "w") as f:
        f.write("# Image list with two lines of data per image:\n#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, "
                "NAME\n#   POINTS2D[] as (X, Y, POINT3D_ID)\n# Number of images: %d\n" % len(images))
        for iid, q, t, cid, name in images:
            f.write("%d %s %d %s\n\n" % (iid, " ".join(repr(v) for v in list(q) + list(t)), cid, name))
    with open(os.path.join(sparse, "points3D.txt"), "w") as f:
        f.write("# 3D point list with one line of data per point:\n#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, "
                "TRACK[] as (IMAGE_ID, POINT2D_IDX)\n# Number of points: 0\n")


def convert(scene, out, fmt, images_mode):
    with open(scene) as f:
        obj = json.load(f)
    folder = os.path.dirname(os.path.abspath(scene))
    is_transforms = isinstance(obj, dict) and "frames" in obj and any("transform_matrix" in fr for fr in obj["frames"])
    frames = transforms_frames(obj, folder) if is_transforms else lact_frames(obj, folder)
    if not frames:
        fail("%s has no frames" % scene)
    names = image_names([fr[0] for fr in frames], folder)
    cameras, camera_of, images = {}, {}, []
    for i, ((file, k, w2c), name) in enumerate(zip(frames, names)):
        if k not in camera_of:
            distorted = any(v != 0.0 for v in k[6:])
            params = list(k[2:]) if distorted else list(k[2:6])
            camera_of[k] = len(cameras) + 1
            cameras[camera_of[k]] = ("OPENCV" if distorted else "PINHOLE", k[0], k[1], params)
        rotation = [row[:3] for row in w2c[:3]]
        q = quaternion(rotation, "frame %d" % i)
        images.append((i + 1, q, [w2c[r][3] for r in range(3)], camera_of[k], name))
    sparse = os.path.join(out, "sparse", "0")
    os.makedirs(sparse, exist_ok=True)
    (write_binary if fmt == "bin" else write_text)(sparse, cameras, images)
    if images_mode != "none":
        for (file, _, _), name in zip(frames, names):
            target = os.path.join(out, "images", name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.lexists(target):
                os.remove(target)
            if images_mode == "link":
                os.symlink(os.path.abspath(file), target)
            else:
                shutil.copyfile(file, target)
    return len(cameras), len(images)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="opencv_cameras.json (LaCT list or Long-LRM dict) or transforms.json")
    parser.add_argument("out", help="output folder: gets sparse/0/ and images/")
    parser.add_argument("--format", choices=("bin", "txt"), default="bin", help="COLMAP binary or text model")
    parser.add_argument("--images", choices=("link", "copy", "none"), default="link",
                        help="images/: symbolic links to the originals (default), copies, or none")
    args = parser.parse_args()
    cameras, images = convert(args.scene, args.out, args.format, args.images)
    print("%s: %d camera(s), %d image(s) (%s)" % (os.path.join(args.out, "sparse", "0"), cameras, images, args.format))


if __name__ == "__main__":
    main()
