#!/usr/bin/env python3
"""Cameras and numbers lact cannot carry (issue "nothing lost", items 10 and 14): huge finite poses and
intrinsics in every reader, rigid-pose checks, strict JSON values, COLMAP names that leave the images folder,
index wrapping, nerfstudio camera models, distortion errors naming the camera, and NaN/inf from weights or
states that overflow float32, refused before anything is written.

Every bad input must end in one `lact: ` line naming the file (or flag) and the frame, view, camera or layer,
with exit code 1 and nothing written; values just inside the bounds must still render.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/cameras_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import copy
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import unittest

from cli_common import FixtureCase, one_error_line, parse_cli_args, ran_ok

ARGS = None


def run(*argv, timeout=120):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       errors="replace", env=dict(os.environ, OMP_NUM_THREADS="2"))
    return p.returncode, p.stdout, p.stderr


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)


def rigid_inverse(m):
    """[R | t; 0 0 0 1]^-1 = [R^T | -R^T t]."""
    r = [[m[j][i] for j in range(3)] for i in range(3)]
    t = [-sum(r[i][k] * m[k][3] for k in range(3)) for i in range(3)]
    return [r[0] + [t[0]], r[1] + [t[1]], r[2] + [t[2]], [0.0, 0.0, 0.0, 1.0]]


def gl_from_cv(c2w):
    """OpenCV camera-to-world -> OpenGL (nerfstudio): the camera's y and z axes flipped."""
    return [[row[0], -row[1], -row[2], row[3]] for row in c2w]


def quaternion(r):
    """Unit quaternion (w, x, y, z) of a rotation matrix (COLMAP's qvec)."""
    trace = r[0][0] + r[1][1] + r[2][2]
    if trace > 0:
        s = 2 * math.sqrt(trace + 1)
        return [0.25 * s, (r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s]
    i = max(range(3), key=lambda k: r[k][k])
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2 * math.sqrt(1 + r[i][i] - r[j][j] - r[k][k])
    q = [0.0] * 4
    q[0] = (r[k][j] - r[j][k]) / s
    q[1 + i] = 0.25 * s
    q[1 + j] = (r[j][i] + r[i][j]) / s
    q[1 + k] = (r[k][i] + r[i][k]) / s
    return q


def scaled_safetensors(src, dst, factor):
    """A copy of a safetensors file with every F32 tensor multiplied by `factor` (header kept byte for byte)."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        count = (end - begin) // 4
        values = struct.unpack_from("<%df" % count, data, base + begin)
        struct.pack_into("<%df" % count, data, base + begin, *[v * factor for v in values])
    with open(dst, "wb") as f:
        f.write(data)


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


class Cameras(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.images = os.path.join(cls.tmp, "images")
        shutil.copytree(os.path.join(cls.scene, "images"), cls.images)
        with open(cls.cameras) as f:
            cls.frames = json.load(f)
        cls.state = os.path.join(cls.tmp, "state.safetensors")
        cls.ok(run("encode", "--model", cls.model, "--data", cls.scene, "--inputs", "0,1,2",
                   "-o", cls.state))
        cls.count = 0

    @staticmethod
    def ok(result):
        return ran_ok(result)

    def folder(self, name):
        Cameras.count += 1
        path = os.path.join(self.tmp, "%02d_%s" % (self.count, name))
        os.makedirs(path)
        return path

    def expect_error(self, result, *names):
        return one_error_line(self, result, names)

    @staticmethod
    def images_in(folder):
        return [f for f in (files_under(folder) if os.path.isdir(folder) else []) if f.endswith((".png", ".npy"))]

    # --- scene writers: the fixture's five views in each layout, `edit` changing them first --------------------
    def lact_scene(self, edit, name="lact", as_dict=False):
        folder = self.folder(name)
        os.symlink(self.images, os.path.join(folder, "images"))
        frames = copy.deepcopy(self.frames)
        obj = dict(scene_name="s", frames=frames) if as_dict else frames
        edit(obj)
        path = os.path.join(folder, "opencv_cameras.json")
        write_json(path, obj)
        return path

    def transforms_scene(self, edit, name="nerfstudio", synthetic=False):
        folder = self.folder(name)
        os.symlink(self.images, os.path.join(folder, "images"))
        frames = [dict(file_path=f["file_path"], transform_matrix=gl_from_cv(rigid_inverse(f["w2c"])))
                  for f in self.frames]
        f0 = self.frames[0]
        if synthetic:  # NeRF-synthetic: only camera_angle_x (square pixels, centred principal point)
            obj = dict(camera_angle_x=2 * math.atan(f0["w"] / (2 * f0["fx"])), frames=frames)
        else:
            obj = dict(camera_model="OPENCV", fl_x=f0["fx"], fl_y=f0["fy"], cx=f0["cx"], cy=f0["cy"], w=f0["w"],
                       h=f0["h"], frames=frames)
        edit(obj)
        path = os.path.join(folder, "transforms_train.json" if synthetic else "transforms.json")
        write_json(path, obj)
        return path

    def colmap_scene(self, binary, edit_camera=None, edit_images=None):
        """sparse/0/{cameras,images}.{txt,bin} of the fixture (one PINHOLE camera), images/ beside sparse/."""
        folder = self.folder("colmap_bin" if binary else "colmap_txt")
        os.symlink(self.images, os.path.join(folder, "images"))
        model = os.path.join(folder, "sparse", "0")
        os.makedirs(model)
        f0 = self.frames[0]
        camera = dict(model="PINHOLE", params=[f0["fx"], f0["fy"], f0["cx"], f0["cy"]])
        if edit_camera:
            edit_camera(camera)
        images = []
        for i, f in enumerate(self.frames):
            r = [row[:3] for row in f["w2c"][:3]]
            images.append(dict(q=quaternion(r), t=[row[3] for row in f["w2c"][:3]], name=os.path.basename(f["file_path"])))
        if edit_images:
            edit_images(images)
        model_ids = {"PINHOLE": 1, "SIMPLE_RADIAL": 2}
        if binary:
            with open(os.path.join(model, "cameras.bin"), "wb") as out:
                out.write(struct.pack("<QIiQQ", 1, 1, model_ids[camera["model"]], f0["w"], f0["h"]))
                out.write(struct.pack("<%dd" % len(camera["params"]), *camera["params"]))
            with open(os.path.join(model, "images.bin"), "wb") as out:
                out.write(struct.pack("<Q", len(images)))
                for i, im in enumerate(images):
                    out.write(struct.pack("<I7dI", i + 1, *(im["q"] + im["t"]), 1))
                    out.write(im["name"].encode() + b"\0" + struct.pack("<Q", 0))
        else:
            with open(os.path.join(model, "cameras.txt"), "w") as out:
                out.write("1 %s %d %d %s\n" % (camera["model"], f0["w"], f0["h"], " ".join(repr(p) for p in camera["params"])))
            with open(os.path.join(model, "images.txt"), "w") as out:
                for i, im in enumerate(images):
                    out.write("%d %s 1 %s\n\n" % (i + 1, " ".join(repr(v) for v in im["q"] + im["t"]), im["name"]))
        return folder, os.path.join(model, "images.bin" if binary else "images.txt")

    def camera_path(self, edit):
        """A camera path file of the fixture's views 3 and 4 and three more (what `lact path` writes)."""
        frames = []
        for f in self.frames:
            frames.append(dict(c2w=rigid_inverse(f["w2c"]), fx=f["fx"], fy=f["fy"], cx=f["cx"], cy=f["cy"], w=f["w"],
                               h=f["h"]))
        edit(frames)
        path = os.path.join(self.folder("path"), "path.json")
        write_json(path, {"format": "lact camera path v1", "frames": frames})
        return path

    def render_path(self, path):
        out = os.path.join(self.folder("out"), "out")
        return run("render", "--state", self.state, "--path", path, "--out", out), out

    # --- item 10: huge finite numbers in every reader ----------------------------------------------------------
    def test_lact_translation_beyond_float_rays(self):
        for value in (1e39, 1e300):
            def edit(frames):
                frames[1]["w2c"][0][3] = value
            path = self.lact_scene(edit)
            self.expect_error(run("info", "--data", path), path, "frame 1", "'w2c'", "translation")
            state = os.path.join(os.path.dirname(path), "s.safetensors")
            self.expect_error(run("encode", "--model", self.model, "--data", path, "--inputs", "0,1,2", "-o", state),
                              "frame 1")
            self.assertFalse(os.path.exists(state))

    def test_lact_focal_length_denormal(self):
        def edit(frames):
            frames[2]["fx"] = 1e-40
        path = self.lact_scene(edit)
        self.expect_error(run("info", "--data", path), path, "frame 2", "fx")

    def test_lvsm_intrinsics_beyond_float(self):
        def edit(frames):
            for f in frames:
                f["fxfycxcy"] = [f.pop("fx"), f.pop("fy"), f.pop("cx"), f.pop("cy")]
            frames[3]["fxfycxcy"][2] = 1e300
        path = self.lact_scene(edit)
        self.expect_error(run("info", "--data", path), path, "frame 3", "cx")

    def test_nerfstudio_translation_beyond_float_rays(self):
        for value in (1e39, 1e300):
            def edit(obj):
                obj["frames"][1]["transform_matrix"][2][3] = value
            path = self.transforms_scene(edit)
            self.expect_error(run("info", "--data", path), path, "frame 1", "translation")

    def test_nerf_synthetic_translation_beyond_float_rays(self):
        def edit(obj):
            obj["frames"][4]["transform_matrix"][0][3] = -1e39
        path = self.transforms_scene(edit, synthetic=True)
        self.expect_error(run("info", "--data", os.path.dirname(path)), path, "frame 4", "translation")

    def test_nerfstudio_focal_length_denormal(self):
        def edit(obj):
            obj["fl_x"] = 1e-40
        path = self.transforms_scene(edit)
        self.expect_error(run("info", "--data", path), path, "fx")

    def test_colmap_tvec_beyond_float_rays(self):
        for binary in (False, True):
            def edit(images):
                images[2]["t"][1] = 1e308
            folder, images_file = self.colmap_scene(binary, edit_images=edit)
            self.expect_error(run("info", "--data", folder), images_file, "tvec")

    def test_colmap_focal_length_denormal(self):
        def edit(camera):
            camera["params"][0] = 1e-40
        folder, _ = self.colmap_scene(False, edit_camera=edit)
        self.expect_error(run("info", "--data", folder), "cameras.txt", "camera 1", "fx")

    def test_camera_path_beyond_float_rays(self):
        cases = [(lambda frames: frames[2]["c2w"][0].__setitem__(3, 1e39), "translation"),
                 (lambda frames: frames[2]["c2w"][1].__setitem__(3, 1e300), "translation"),
                 (lambda frames: frames[2].__setitem__("fx", 1e-40), "fx")]
        for edit, what in cases:
            path = self.camera_path(edit)
            result, out = self.render_path(path)
            self.expect_error(result, path, "frame 2", what)
            self.assertEqual(self.images_in(out), [])

    def test_values_just_inside_the_bounds_render(self):
        def edit(frames):
            frames[0]["c2w"][0][3] = 1e15
            frames[1]["fx"] = frames[1]["fy"] = 1e-3
            frames[2]["fx"] = frames[2]["fy"] = 1e8
            frames[3]["cx"] = frames[3]["cy"] = -(2.0 ** 20)
            for row in range(3):  # a rotation rounded to 4 decimals is still one
                frames[4]["c2w"][row][:3] = [round(v, 4) for v in frames[4]["c2w"][row][:3]]
        path = self.camera_path(edit)
        result, out = self.render_path(path)
        self.ok(result)
        self.assertEqual(self.images_in(out), ["frame_%04d.png" % i for i in range(5)])

        def lact_edit(frames):
            frames[3]["w2c"][1][3] = -1e15
            frames[4]["fx"] = 1e8
        self.ok(run("info", "--data", self.lact_scene(lact_edit)))

    # --- item 14: rigid poses --------------------------------------------------------------------------------
    def test_w2c_not_rigid(self):
        def last_row(frames):
            frames[1]["w2c"][3] = [0, 0, 0, 2]

        def scaled(frames):
            frames[1]["w2c"][:3] = [[2 * v for v in row[:3]] + row[3:] for row in frames[1]["w2c"][:3]]

        def sheared(frames):
            frames[1]["w2c"][0][1] += 0.5

        def mirrored(frames):
            frames[1]["w2c"][0] = [-v for v in frames[1]["w2c"][0]]
        for edit, what in ((last_row, "last row"), (scaled, "scaled"), (sheared, "sheared"), (mirrored, "mirrored")):
            path = self.lact_scene(edit)
            self.expect_error(run("info", "--data", path), path, "frame 1", "'w2c'", what)

    def test_transform_matrix_and_path_not_rigid(self):
        def mirrored(obj):
            obj["frames"][2]["transform_matrix"][1] = [-v for v in obj["frames"][2]["transform_matrix"][1]]
        path = self.transforms_scene(mirrored)
        self.expect_error(run("info", "--data", path), path, "frame 2", "mirrored")

        def sheared(frames):
            frames[0]["c2w"][2][0] += 0.3
        path = self.camera_path(sheared)
        self.expect_error(self.render_path(path)[0], path, "frame 0", "sheared")

    # --- item 14: strict JSON values --------------------------------------------------------------------------
    def test_boolean_is_not_a_size(self):
        def edit(frames):
            frames[0]["w"] = True
        path = self.lact_scene(edit)
        self.expect_error(run("info", "--data", path), path, "frame 0", "'w'")

        def path_edit(frames):
            frames[1]["h"] = False
        self.expect_error(self.render_path(self.camera_path(path_edit))[0], "frame 1", "'h'")

    def test_nul_byte_in_paths(self):
        def edit(frames):
            frames[0]["file_path"] = "images/000.png\u0000.jpg"
        path = self.lact_scene(edit)
        self.expect_error(run("info", "--data", path), path, "frame 0", "NUL")

        def transforms_edit(obj):
            obj["frames"][3]["file_path"] = "images/003.png\u0000"
        path = self.transforms_scene(transforms_edit)
        self.expect_error(run("info", "--data", path), path, "frame 3", "NUL")

        index = os.path.join(self.folder("index"), "index.json")
        write_json(index, [self.lact_scene(lambda f: None) + "\u0000x"])
        rc, so, se = run("render", "--model", self.model, "--data", index, "--inputs", "0,1,2", "--targets", "3",
                         "--out", os.path.join(os.path.dirname(index), "out"))
        self.assertEqual(rc, 1, se)
        self.assertIn("NUL", so + se)

    def test_kmeans_index_does_not_wrap(self):
        for index in (4294967296, 18446744073709551615, 5):
            def edit(obj):
                obj["fold_8_kmeans_3_input"] = [index, 1, 2]
            path = self.lact_scene(edit, as_dict=True)
            self.expect_error(run("info", "--data", path, "--inputs", "fold8", "--targets", "fold8"), path,
                              "fold_8_kmeans_3_input", str(index), "out of range")

    # --- item 14: COLMAP names stay under the images folder ---------------------------------------------------
    def test_colmap_names_stay_under_images(self):
        outside = os.path.join(self.tmp, "outside.png")
        shutil.copyfile(os.path.join(self.images, "000.png"), outside)
        for binary in (False, True):
            for name, what in (("../../outside.png", ".."), (outside, "absolute"), ("sub/../../x.png", "..")):
                def edit(images):
                    images[1]["name"] = name
                folder, images_file = self.colmap_scene(binary, edit_images=edit)
                self.expect_error(run("info", "--data", folder), images_file, what)

    # --- item 14: nerfstudio camera_model ---------------------------------------------------------------------
    def test_nerfstudio_camera_model(self):
        for model in ("EQUIRECTANGULAR", "FISHEYE624"):
            def edit(obj):
                obj["camera_model"] = model
            path = self.transforms_scene(edit)
            self.expect_error(run("info", "--data", path), path, model)
        for model in ("OPENCV", "PINHOLE", "SIMPLE_PINHOLE", "OPENCV_FISHEYE"):
            def ok_edit(obj):
                obj["camera_model"] = model
            so = self.ok(run("info", "--data", self.transforms_scene(ok_edit)))
            self.assertEqual("fisheye lens (k1..k4) in" in so, model == "OPENCV_FISHEYE", so)

    # --- item 14: distortion that cannot be inverted names the file and camera --------------------------------
    def test_distortion_not_invertible_names_file_and_camera(self):
        def edit(obj):
            obj["k1"] = -8.0
        path = self.transforms_scene(edit)
        self.expect_error(run("info", "--data", path), path, "frame 0", "distortion")

        def colmap_edit(camera):
            f0 = self.frames[0]
            camera.update(model="SIMPLE_RADIAL", params=[f0["fx"], f0["cx"], f0["cy"], -8.0])
        folder, _ = self.colmap_scene(True, edit_camera=colmap_edit)
        self.expect_error(run("info", "--data", folder), "cameras.bin", "camera 1", "distortion")

    # --- item 10: values that overflow float32 inside the model -----------------------------------------------
    def test_weights_that_overflow_are_refused_by_layer(self):
        model = os.path.join(self.tmp, "model_x1e30.safetensors")
        scaled_safetensors(self.model, model, 1e30)
        scene = self.lact_scene(lambda f: None)
        state = os.path.join(self.tmp, "overflow_state.safetensors")
        self.expect_error(run("encode", "--model", model, "--data", scene, "--inputs", "0,1,2", "-o", state),
                          "layer")
        self.assertFalse(os.path.exists(state))
        out = os.path.join(self.folder("weights_out"), "out")
        self.expect_error(run("render", "--model", model, "--data", scene, "--inputs", "0,1,2", "--targets", "3,4",
                              "--out", out), "layer")
        self.assertEqual(self.images_in(out), [])

    def test_state_that_overflows_is_refused_by_view_and_frame(self):
        state = os.path.join(self.tmp, "state_x1e30.safetensors")
        scaled_safetensors(self.state, state, 1e30)
        out = os.path.join(self.folder("state_out"), "out")
        self.expect_error(run("render", "--state", state, "--targets", "3,4", "--out", out), "view 3")
        self.assertEqual(self.images_in(out), [])
        path = self.camera_path(lambda frames: None)
        out = os.path.join(self.folder("state_path_out"), "out")
        self.expect_error(run("render", "--state", state, "--path", path, "--out", out), path, "frame 0")
        self.assertEqual(self.images_in(out), [])

    def test_state_that_overflows_gets_an_error_from_lact_serve_not_a_black_frame(self):
        """Before: lact serve's render thread had no such check: POST /api/render answered 200 with an all-black
        PNG (NaN through the 8-bit conversion) and the stream a frame whose PSNR was null."""
        help_text = run("--help")[1]
        if " serve" not in help_text:
            self.skipTest("lact built without serve")
        from serve_common import Server  # noqa: E402
        from ws_client import WebSocket  # noqa: E402
        state = os.path.join(self.tmp, "serve_state_x1e30.safetensors")
        scaled_safetensors(self.state, state, 1e30)
        server = Server(ARGS.lact, "--state", state, "--out", self.folder("serve_out"))
        try:
            camera = server.ready()["views"][3]["camera"]
            status, _, body = server.render(camera)
            self.assertEqual(status, 422, body[:200])
            self.assertIn("NaN or infinity in 4608 of 4608 values", json.loads(body)["error"])
            ws = WebSocket(server.stream_url())
            ws.send_json({"type": "camera", "camera": camera, "view": 3})
            while True:
                message = ws.recv()
                self.assertIsInstance(message, str, "a frame of NaN was sent")
                reply = json.loads(message)
                if reply["type"] == "error":
                    break
            self.assertIn("overflow float32", reply["message"])
            ws.close()
            self.assertTrue(server.alive())
        finally:
            server.stop()


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest)
