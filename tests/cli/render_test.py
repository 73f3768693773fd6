#!/usr/bin/env python3
"""End-to-end tests of the lact CLI against the lact_tiny parity fixture.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/render_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny --tools tools
Everything the tests write goes to temporary folders.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np
from cli_common import FixtureCase, one_error_line, use_fixture

ARGS = None
INPUTS, TARGETS = "0,1,2", "3,4"


def run(*argv):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def png_size(path):
    """(width, height) from a PNG's IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", "%s is not a PNG" % path
    return struct.unpack(">II", head[16:24])


def write_png(path, w, h):
    """An RGBA 8-bit PNG with a gradient, written with zlib + struct."""
    rows = b"".join(b"\x00" + bytes(((x * 5) % 256, (y * 7) % 256, 128, 255)[c] for x in range(w) for c in range(4))
                    for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


class CliTest(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        from tools.reference import safetensors_io
        cls.st = safetensors_io
        cls.cams = cls.cameras
        expected, _ = safetensors_io.load(os.path.join(cls.fx, "expected.safetensors"))
        cls.expected = expected["target_render_rendering"].numpy()
        cls.reference = cls.render_npy(cls.model)

    @classmethod
    def render_npy(cls, model, *extra, check_png=False):
        """Render targets 3,4 with --save-npy; returns the stacked [2,3,H,W] result."""
        out = tempfile.mkdtemp(dir=cls.tmp)
        rc, so, se = run("render", "--model", model, "--data", cls.index, "--inputs", INPUTS, "--targets", TARGETS,
                         "--out", out, "--save-npy", *extra)
        assert rc == 0, "render failed (rc %d): %s%s" % (rc, so, se)
        views = []
        for v in (3, 4):
            if check_png:
                assert png_size(os.path.join(out, "scene", "%d.png" % v)) == (48, 32)
            arr = np.load(os.path.join(out, "scene", "%d.npy" % v))
            assert arr.dtype == np.float32 and arr.shape == (32, 48, 3), (arr.dtype, arr.shape)
            views.append(arr.transpose(2, 0, 1))
        return np.stack(views)

    def path(self, name):
        return os.path.join(self.tmp, name)

    # ---------------------------------------------------------------- results
    def test_1_parity(self):
        got = self.render_npy(self.model, check_png=True)
        err = float(np.abs(got - self.expected).max())
        print("\n  parity (model.safetensors): max abs error %.3g" % err)
        self.assertLessEqual(err, 1e-4)

    def test_2_converter(self):
        out = self.path("converted.safetensors")
        p = subprocess.run([sys.executable, "-m", "tools.convert_checkpoint",
                            os.path.join(self.fx, "model.pt"), "--config", os.path.join(self.fx, "config.json"),
                            "-o", out], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        err = float(np.abs(self.render_npy(out) - self.expected).max())
        print("\n  parity (converted model.pt): max abs error %.3g" % err)
        self.assertLessEqual(err, 1e-4)

    def test_3_encode_state_info(self):
        state = self.path("state.safetensors")
        rc, so, se = run("encode", "--model", self.model, "--data", self.index, "--inputs", INPUTS, "-o", state)
        self.assertEqual(rc, 0, so + se)
        out = tempfile.mkdtemp(dir=self.tmp)
        rc, so, se = run("render", "--state", state, "--targets", TARGETS, "--out", out, "--save-npy")
        self.assertEqual(rc, 0, so + se)
        got = np.stack([np.load(os.path.join(out, "scene", "%d.npy" % v)).transpose(2, 0, 1) for v in (3, 4)])
        err = float(np.abs(got - self.reference).max())
        print("\n  state render vs direct render: max abs diff %.3g" % err)
        self.assertLessEqual(err, 1e-6)
        for f, flag in ((self.model, "--model"), (state, "--state")):
            rc, so, se = run("info", f)
            self.assertEqual(rc, 0, so + se)
            self.assertIn("fast weights", so)
            # The flag every other command names the file with says the same (before: "there is no flag --model").
            self.assertEqual(run("info", flag, f), (0, so, se))
        rc, so, _ = run("info", self.model)
        self.assertIn("parameters: 499334", so)

    def test_3b_state_dtype_bf16(self):
        """--state-dtype bf16: half the bytes, the fast weights rounded to nearest even, and its renders equal to
        those of an fp32 state holding the same rounding done here in numpy (an independent rounding)."""
        full, half = self.path("full.safetensors"), self.path("half.safetensors")
        for path, dtype in ((full, "fp32"), (half, "bf16")):
            rc, so, se = run("encode", "--model", self.model, "--data", self.index, "--inputs", INPUTS, "-o", path,
                             "--state-dtype", dtype, "--force")
            self.assertEqual(rc, 0, so + se)
        ratio = os.path.getsize(half) / os.path.getsize(full)
        weights, meta = self.st.load(full)
        stored, _ = self.st.load(half)
        rounded = {}
        for name, t in weights.items():
            bits = t.numpy().astype("<f4").view(np.uint32).astype(np.uint64)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
            rounded[name] = bits.view(np.float32)
            self.assertTrue(np.array_equal(stored[name].numpy(), rounded[name]), name)
        numpy_rounded = self.path("numpy_rounded.safetensors")
        self.st.save(numpy_rounded, rounded, meta)
        images = {}
        for name, state in (("full", full), ("half", half), ("numpy", numpy_rounded)):
            out = tempfile.mkdtemp(dir=self.tmp)
            rc, so, se = run("render", "--state", state, "--targets", TARGETS, "--out", out, "--save-npy")
            self.assertEqual(rc, 0, so + se)
            images[name] = np.stack([np.load(os.path.join(out, "scene", "%d.npy" % v)) for v in (3, 4)])
        exact = float(np.abs(images["half"] - images["numpy"]).max())
        drift = float(np.abs(images["half"] - images["full"]).max())
        print("\n  bf16 state: %.3f of the fp32 file; render vs numpy-rounded fp32 state %.3g, vs fp32 state %.3g"
              % (ratio, exact, drift))
        self.assertLess(ratio, 0.55)
        self.assertLessEqual(exact, 1e-6)
        self.assertLess(drift, 0.05)

    def test_3c_bench_statistics(self):
        """lact bench: every sample in the JSON, median and minimum recomputed here; a bf16 run (where the CPU has
        bf16) also times fp32 in the same run; --gemm-libraries prints every library's column."""
        _, devices, _ = run("info", "--devices")
        bf16 = "refused" not in devices.split("bf16 products:")[-1].splitlines()[0]
        out = self.path("bench.json")
        args = ["bench", "--models", "lact", "--layers", "2", "--dim", "64", "--views", "2", "--size", "32",
                "--repeat", "3", "--warmup", "1", "--threads", "1", "--json", out, "--force"]
        rc, so, se = run(*(args + (["--precision", "bf16"] if bf16 else [])))
        self.assertEqual(rc, 0, so + se)
        with open(out) as f:
            bench = json.load(f)
        self.assertEqual(bench["format"], "lact bench v3")
        self.assertEqual(sorted(r["precision"] for r in bench["rows"]), ["bf16", "fp32"] if bf16 else ["fp32"])
        for r in bench["rows"]:
            samples = r["encode_samples_s"]
            self.assertEqual(len(samples), 3)
            self.assertAlmostEqual(r["encode_s"], sorted(samples)[1], places=9)
            self.assertAlmostEqual(r["encode_min_s"], min(samples), places=9)
            self.assertGreater(r["gemm_gflops"], 0)
            # The table's "encode / GEMM" and "render / GEMM" columns: the counted rates over the gemm rate.
            line = [t for t in so.splitlines() if t.startswith("| lact | %s |" % r["precision"])][0]
            cells = [c.strip() for c in line.split("|")[1:-1]]
            self.assertAlmostEqual(float(cells[15].rstrip("%")), 100 * r["encode_gflops"] / r["gemm_gflops"], delta=0.51)
            self.assertAlmostEqual(float(cells[16].rstrip("%")), 100 * r["render_gflops"] / r["gemm_gflops"], delta=0.51)
            # The first frame after each encode, timed apart from the frames the FPS is read from.
            self.assertAlmostEqual(float(cells[11]), r["first_frame_s"], delta=0.0006)
            self.assertGreater(r["first_frame_s"], 0)
        if bf16:  # the ratio to fp32 in this run, or why not (1-thread timings this small can spread widely)
            rows = {r["precision"]: r for r in bench["rows"]}
            line = [t for t in so.splitlines() if t.startswith("  lact 2 views 32x32 at bf16: ")][0]
            def spread(values):
                return (max(values) - min(values)) / statistics.median(values)

            if "not stated" in line:  # (max - min) / median of bf16 and of fp32 together over 25%
                self.assertIn("(too wide a spread to trust)", line)
                self.assertGreater(max(spread(rows["bf16"][k]) + spread(rows["fp32"][k])
                                       for k in ("encode_samples_s", "render_samples_s_per_view")), 0.25, line)
            else:
                self.assertIn("encode %.2fx" % (rows["fp32"]["encode_s"] / rows["bf16"]["encode_s"]), line)
        else:  # asked for where the CPU has none: one line, before the fp32 baseline is timed
            result = run(*(args + ["--precision", "bf16"]))
            one_error_line(self, result, ["--device cpu", "bf16"])
            self.assertNotIn("lact fp32", result[2])
        rc, so, se = run("bench", "--gemm-libraries", "--layers", "2", "--dim", "64", "--views", "2", "--size", "32",
                         "--repeat", "1", "--threads", "1")
        self.assertEqual(rc, 0, so + se)
        header = [line for line in so.splitlines() if line.startswith("| product")][0]
        for column in ("OpenBLAS fp32", "fp32 |", "bf16 |", "oneDNN fp32 / OpenBLAS"):
            self.assertIn(column, header)
        self.assertEqual(len([line for line in so.splitlines() if line.startswith("| MLP")]), 2)

    def test_3e_bench_refuses_nonsense_before_timing(self):
        """Each bad bench flag: one line naming it, before the GEMM ceiling is timed (no "lact bench:" header). The
        count flags printed DBL_MAX in 300 digits ("Value 0 not in range 0.000000 to 1797..."), an empty --models
        timed nothing and exited 0, a --size off the patch grid was refused after the timing without naming --size."""
        small = ["--layers", "2", "--dim", "64", "--views", "2", "--threads", "1"]
        cases = [(["--repeat", "0"], ["--repeat", "1 to 10000"]), (["--targets", "0"], ["--targets", "1 to 10000"]),
                 (["--warmup", "-1"], ["--warmup", "0 to 10000"]), (["--models", ""], ["--models", "empty"]),
                 (["--models", "lact,,full"], ["--models", "empty item"]), (["--models", "full,full"], ["--models", "twice"]),
                 (["--size", "36"], ["--size", "36x36", "patch size 8"]),
                 (["--size", "32,32x44", "--gemm-libraries"], ["--size", "32x44", "patch"]),
                 (["--size", "64,24", "--lpips"], ["--size", "24x24", "31 pixels"]),
                 (["--scaling", "--ranks", "0"], ["--ranks", "1..128"]),
                 (["--ranks", "2,4"], ["--ranks", "--scaling"]), (["--tflops", "400"], ["--tflops", "--scaling"])]
        for extra, names in cases:
            rc, so, se = run("bench", *(small + extra + ([] if "--size" in extra else ["--size", "32"])))
            line = one_error_line(self, (rc, so, se), names)
            self.assertLess(len(line), 200, line)
            self.assertNotIn("lact bench", so, extra)
            self.assertNotIn("| model", so, extra)

    def test_3d_bench_reference(self):
        """lact bench --reference: the PyTorch reference of the same (scaled) model, lact fp32 and (where the CPU
        has bf16) bf16 in one table; each speed-up is the reference's time over lact's, recomputed here."""
        _, devices, _ = run("info", "--devices")
        bf16 = "refused" not in devices.split("bf16 products:")[-1].splitlines()[0]
        rc, so, se = run("bench", "--models", "lact", "--layers", "2", "--dim", "128", "--views", "2", "--size", "64",
                         "--repeat", "2", "--threads", "1", "--reference")
        self.assertEqual(rc, 0, so + se)
        self.assertIn('"dim":128,"layers":2', so)  # the reference was given lact's scaled config
        self.assertNotIn("bf16 not timed", so + se)  # bf16 was not asked for: left out without a word
        rows = {}
        for line in so.splitlines():
            if line.startswith("| PyTorch reference") or line.startswith("| lact, "):
                cells = [c.strip() for c in line.split("|")[1:-1]]
                rows[cells[0]] = [float(c.rstrip("x")) for c in cells[1:]]
        self.assertEqual(sorted(rows), sorted(["PyTorch reference, fp32", "lact, fp32"] + (["lact, bf16"] if bf16 else [])))
        ref = rows["PyTorch reference, fp32"]
        for name, (encode, render, encode_up, render_up) in rows.items():
            for mine, theirs, up in ((encode, ref[0], encode_up), (render, ref[1], render_up)):
                # Times are printed to 4 significant digits (each within 0.05% of the time), speed-ups to 2
                # decimals: the speed-up lies between the quotients of the printed times' bounds.
                rel = 0.0005
                low = theirs * (1 - rel) / (mine * (1 + rel))
                high = theirs * (1 + rel) / (mine * (1 - rel))
                self.assertGreaterEqual(up + 0.0051, low, msg=name)
                self.assertLessEqual(up - 0.0051, high, msg=name)

    def test_4_threads(self):
        a = self.render_npy(self.model, "--threads", "1")
        b = self.render_npy(self.model, "--threads", "2")
        err = float(np.abs(a - b).max())
        print("\n  --threads 1 vs 2: max abs diff %.3g" % err)
        self.assertLessEqual(err, 1e-5)

    def test_4b_devices(self):
        """`lact info --devices` lists every backend; without a GPU, --device cuda fails in one line before work."""
        rc, so, se = run("info", "--devices")
        self.assertEqual(rc, 0, se)
        self.assertRegex(so, r"(?m)^cpu +CPU, \d+ threads?,")
        print("\n  " + so.strip().replace("\n", "\n  "))
        if re.search(r"(?m)^cuda +unavailable", so):
            self.expect_error(self.model_args(self.model) + ["--device", "cuda"], ["cuda", "no usable CUDA device"])
        self.expect_error(self.model_args(self.model) + ["--precision", "tf32"], ["no tf32"])
        self.assertRegex(so, r"(?m)^ +bf16 products: ")
        if "refused" in so:  # a CPU without bf16 instructions (or no oneDNN): one line saying why
            self.expect_error(self.model_args(self.model) + ["--precision", "bf16"], ["bf16"])

    # ---------------------------------------------------------------- errors
    def expect_error(self, args, names, render=True, targets=TARGETS):
        """Run a failing command; check exit code 1, one 'lact: ' line naming each of `names`, no outputs."""
        out = tempfile.mkdtemp(dir=self.tmp)
        if render:
            args = ["render", "--targets", targets, "--out", out, "--save-npy"] + args
        rc, so, se = run(*args)
        lines = se.strip().splitlines()
        print("\n    %s" % se.strip().replace("\n", "\n    "), end="")
        msg = "\n  cmd: lact %s\n  rc=%d stderr=%r" % (" ".join(map(str, args)), rc, se)
        self.assertEqual(rc, 1, msg)
        self.assertEqual(len(lines), 1, msg)
        self.assertTrue(lines[0].startswith("lact: ") and len(lines[0]) > 6, msg)
        for bad in ("Traceback", "terminate called", "Segmentation", "what():"):
            self.assertNotIn(bad, se, msg)
        for n in names:
            self.assertIn(n, lines[0], msg)
        left = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
        self.assertEqual(left, [], msg)

    def bad_model(self, name, tensors=None, metadata=None, raw=None):
        path = self.path(name)
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            self.st.save(path, tensors, metadata)
        return path

    def model_args(self, model):
        return ["--model", model, "--data", self.index, "--inputs", INPUTS]

    def test_5_bad_models(self):
        with open(self.model, "rb") as f:
            raw = f.read()
        t, meta = self.st.load(self.model)
        n = struct.unpack("<Q", raw[:8])[0]
        cases = {
            "a_missing": (self.path("missing.safetensors"), []),
            "b_truncated": (self.bad_model("truncated.safetensors", raw=raw[:len(raw) // 2]), []),
            "c_garbage": (self.bad_model("garbage.safetensors",
                                         raw=bytes(np.random.RandomState(0).randint(0, 256, 4096, dtype=np.uint8))), []),
            "c_bad_header_json": (self.bad_model("badjson.safetensors",
                                                 raw=raw[:8] + b"{garbage" + b"#" * (n - 8) + raw[8 + n:]), []),
        }
        key = "blocks.1.module_list.1.f.lr_fc.weight"
        cases["d_missing_tensor"] = (self.bad_model("notensor.safetensors",
                                                    {k: v for k, v in t.items() if k != key}, meta), [key])
        shapes = dict(t)
        shapes["blocks.0.module_list.1.f.w0"] = t["blocks.0.module_list.1.f.w0"][:, :, :191]
        cases["e_wrong_shape"] = (self.bad_model("shape.safetensors", shapes, meta), ["blocks.0.module_list.1.f.w0"])
        for field, value in (("layers", 3), ("dim", 128)):
            cfg = json.loads(meta["config"])
            cfg[field] = value
            cases["f_config_%s" % field] = (self.bad_model("cfg_%s.safetensors" % field, t,
                                                           dict(meta, config=json.dumps(cfg))), [])
        for case, (model, extra) in cases.items():
            with self.subTest(case=case):
                self.expect_error(self.model_args(model), [os.path.basename(model)] + extra)

    def scene_copy(self, name, edit=None):
        """A copy of the fixture scene in tmp/name/scene; edit(cams, folder) may change it. Returns the camera file."""
        folder = os.path.join(self.tmp, name, "scene")
        shutil.copytree(os.path.join(self.fx, "scene"), folder)
        cams_path = os.path.join(folder, "opencv_cameras.json")
        with open(cams_path) as f:
            cams = json.load(f)
        if edit:
            cams = edit(cams, folder) or cams
        if cams is not None:
            with open(cams_path, "w") as f:
                f.write(cams if isinstance(cams, str) else json.dumps(cams, indent=1))
        return cams_path

    def test_6_bad_data(self):
        def small(cams, folder):
            for c in cams:
                write_png(os.path.join(folder, c["file_path"]), 45, 30)
                c["w"], c["h"] = 45, 30

        def nan(cams, folder):
            cams[1]["w2c"][0][0] = float("nan")

        def overflow(cams, folder):  # 1e999 is valid JSON syntax but overflows a double
            return json.dumps(cams).replace("2.328169627086275", "1e999", 1)

        def no_image(cams, folder):
            os.remove(os.path.join(folder, "images", "001.png"))

        def bad_png(cams, folder):
            with open(os.path.join(folder, "images", "002.png"), "r+b") as f:
                f.seek(40)
                f.write(b"\x00garbage" * 16)

        index = self.path("bad_index.json")
        with open(index, "w") as f:
            json.dump(["nowhere/opencv_cameras.json"], f)
        cases = {
            "g_not_div8": (self.scene_copy("g", small), "opencv_cameras.json", []),
            "h_target_range": (self.cams, "opencv_cameras.json", []),
            "i_corrupt_json": (self.scene_copy("i", lambda c, d: '[{"w": 48, "h": 32, "fx": '),
                               "opencv_cameras.json", []),
            "j_nan_w2c": (self.scene_copy("j", nan), "opencv_cameras.json", []),
            "j_overflow_w2c": (self.scene_copy("j2", overflow), "opencv_cameras.json", []),
            "j_missing_fx": (self.scene_copy("j3", lambda c, d: c[2].pop("fx") and None), "opencv_cameras.json", []),
            "j_singular_w2c": (self.scene_copy("j4", lambda c, d: c[2].update(w2c=[[0] * 4] * 4)),
                               "opencv_cameras.json", []),
            "h_input_range": (self.cams, "opencv_cameras.json", ["--inputs", "0,7"]),
            "k_missing_image": (self.scene_copy("k", no_image), "001.png", []),
            "l_corrupt_png": (self.scene_copy("l", bad_png), "002.png", []),
            "m_size_not_div8": (self.cams, "--size", ["--size", "30x45"]),
            "o_index_missing_cams": (index, "nowhere", []),
        }
        for case, (data, name, extra) in cases.items():
            with self.subTest(case=case):
                inputs = [] if "--inputs" in extra else ["--inputs", INPUTS]
                self.expect_error(["--model", self.model, "--data", data] + inputs + extra, [name],
                                  targets="3,9" if case == "h_target_range" else TARGETS)
        with self.subTest(case="n_state_not_a_state"):
            self.expect_error(["--state", self.model], [os.path.basename(self.model)])
        with self.subTest(case="encode_bad_output_dir"):
            self.expect_error(["encode"] + self.model_args(self.model) + ["-o", self.path("no/such/dir/s.safetensors")],
                              ["no/such/dir"], render=False)


    def test_7_mistyped_commands_and_flags_get_a_guess(self):
        """A subcommand or flag one or two edits away from a real one is named; one line, exit 1."""
        cases = [(["rendr"], "'rendr' is not a lact command; did you mean 'render'?"),
                 (["encod", "--model", "m"], "did you mean 'encode'?"),
                 (["render", "--input", "0,1"], "render: there is no flag --input; did you mean --inputs?"),
                 (["render", "--inputs=0", "--targts", "3"], "did you mean --targets?"),
                 (["info", "--dat", "x"], "info: there is no flag --dat; did you mean --data?"),
                 (["xyzzy"], "'xyzzy' is not a lact command (see lact --help)"),
                 (["render", "--frobnicate"], "render: there is no flag --frobnicate (see lact render --help)"),
                 # What other tools call a flag: lact's name for it, in the command's own form (render --out,
                 # encode --output); before, no guess or a wrong one ("--gpu": "did you mean --fps?").
                 (["render", "--gpu"], "render: there is no flag --gpu; did you mean --device cuda?"),
                 (["serve", "--host", "0.0.0.0"], "serve: there is no flag --host; did you mean --bind?"),
                 (["render", "--output", "o"], "render: there is no flag --output; did you mean --out?"),
                 (["encode", "--out", "o"], "encode: there is no flag --out; did you mean --output?"),
                 (["render", "-o", "o"], "render: there is no flag -o; did you mean --out?"),
                 (["render", "--checkpoint=m"], "render: there is no flag --checkpoint; did you mean --model?"),
                 (["path", "turntable", "--elevation", "-10", "-x"], "path: there is no flag -x (see lact path --help)"),
                 (["bench", "--out", "o"], "bench: there is no flag --out (see lact bench --help)")]
        for argv, expected in cases:
            rc, so, se = run(*argv)
            lines = se.strip().splitlines()
            self.assertEqual((rc, len(lines)), (1, 1), "%r: %s" % (argv, se))
            self.assertIn(expected, lines[0], argv)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lact", default="build/app/lact")
    parser.add_argument("--fixture", default="../shared/fixtures/lact_tiny")
    parser.add_argument("--tools", default="tools")
    ARGS, rest = parser.parse_known_args()
    use_fixture(ARGS.fixture)
    ARGS.lact = os.path.abspath(ARGS.lact)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
