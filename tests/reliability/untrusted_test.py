#!/usr/bin/env python3
"""lact against untrusted input: one test per item of the adversarial run (issue 12), named after it.

Every bad input must end in one `lact: ` line naming the file or flag and exit 1, with nothing written outside
--out, no existing file changed and no partial file under a final name; legitimate but odd inputs (quotes and
shell characters in paths) must simply work.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/untrusted_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny --tools tools
"""
import csv
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time
import unittest
import zlib

from cli_common import FixtureCase, one_error_line, parse_cli_args, ran_ok

ARGS = None


def run(*argv, timeout=120, limit_file_bytes=None, cwd=None):
    def limit():
        if limit_file_bytes is not None:  # a "full disk" for this process: writes past the limit fail (EFBIG)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       preexec_fn=limit, cwd=cwd, errors="replace")
    return p.returncode, p.stdout, p.stderr


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def all_files(folder):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs)


def png_header_only(path, width, height):
    """A PNG whose header declares width x height, with a tiny (truncated) image stream."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def safetensors_bytes(header, data=b""):
    head = json.dumps(header).encode()
    head += b" " * ((-len(head)) % 8)
    return struct.pack("<Q", len(head)) + head + data


class Untrusted(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.state = os.path.join(cls.tmp, "s.safetensors")
        cls.ok(run("encode", "--model", cls.model, "--data", cls.scene, "--inputs", "0,1,2", "-o", cls.state))
        cls.path4 = os.path.join(cls.tmp, "p4.json")
        cls.ok(run("path", "turntable", "--frames", "4", "--size", "32x48", "-o", cls.path4))
        with open(cls.model, "rb") as f:
            cls.model_bytes = f.read()
        cls.have_ffmpeg = shutil.which("ffmpeg") is not None and shutil.which("ffprobe") is not None

    @staticmethod
    def ok(result):
        return ran_ok(result)

    def fresh(self, name):
        folder = os.path.join(self.tmp, name)
        os.makedirs(folder)
        return folder

    def expect_error(self, result, names=(), quick=None):
        return one_error_line(self, result, names)

    def frames_in(self, video):
        out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                              "stream=nb_read_frames", "-of", "csv=p=0", video], capture_output=True, text=True)
        return int(out.stdout.strip())

    def model_with_config(self, name, config_text):
        """The fixture model with its metadata config replaced by `config_text`."""
        n = struct.unpack("<Q", self.model_bytes[:8])[0]
        header = json.loads(self.model_bytes[8:8 + n])
        header["__metadata__"]["config"] = config_text
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(safetensors_bytes(header, self.model_bytes[8 + n:]))
        return path

    # 1 -------------------------------------------------------------------------------------------------------
    def test_01_shell_injection(self):
        folder = self.fresh("it's; $(touch pwned1)")
        out = os.path.join(folder, "o'ut")
        video = os.path.join(folder, "v'; touch pwned2; echo $(id) '.mp4")
        so = self.ok(run("render", "--state", self.state, "--path", self.path4, "--out", out, "--video", video,
                         cwd=folder))
        self.assertEqual(len([f for f in os.listdir(out) if f.endswith(".png")]), 4)
        if self.have_ffmpeg:
            self.assertEqual(self.frames_in(video), 4, so)
        for d, dirs, files in os.walk(self.tmp):
            self.assertFalse([f for f in files + dirs if f.startswith("pwned")], d)
        # The reference's python is run without a shell too: a "program" with shell syntax does not exist.
        self.expect_error(run("bench", "--reference", "--python", "python3; touch %s/pwned3" % folder,
                              "--layers", "1", "--dim", "64", "--size", "16", "--views", "1"), ["--python"])
        self.assertFalse(os.path.exists(os.path.join(folder, "pwned3")))

    # 2 -------------------------------------------------------------------------------------------------------
    def long_lrm_scene(self, root, folder, scene_name):
        """The fixture scene as a Long-LRM dict with `scene_name`; returns its camera file."""
        with open(os.path.join(self.scene, "opencv_cameras.json")) as f:
            frames = json.load(f)
        for fr in frames:
            fr["file_path"] = os.path.join(self.scene, fr["file_path"])
        path = os.path.join(root, folder, "opencv_cameras.json")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            json.dump({"scene_name": scene_name, "frames": frames}, f)
        return path

    def test_02_dataset_controlled_paths(self):
        root = self.fresh("data2")
        names = ["..", "/", "../../escape", ".hidden", "a,b\n\"c\"", "=HYPERLINK(\"x\")", "same", "same", "\x1b[2Jx"]
        files = [self.long_lrm_scene(root, "s%d" % i, n) for i, n in enumerate(names)]
        index = os.path.join(root, "index.json")
        with open(index, "w") as f:
            json.dump(files, f)
        base = self.fresh("run2")
        out = os.path.join(base, "out")
        before = set(all_files(self.tmp)) - set(all_files(out) if os.path.isdir(out) else [])
        self.ok(run("render", "--model", self.model, "--data", index, "--inputs", "0,1,2", "--targets", "3",
                    "--out", out))
        written = set(all_files(self.tmp)) - before
        self.assertTrue(written)
        for path in written:
            self.assertTrue(os.path.realpath(path).startswith(os.path.realpath(out) + os.sep), path)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        folders = [s["folder"] for s in report["scenes"]]
        self.assertEqual(len(set(folders)), len(names), folders)  # collisions disambiguated
        for folder in folders:
            self.assertNotIn("/", folder)
            self.assertFalse(folder.startswith("."), folder)
            self.assertTrue(os.path.isfile(os.path.join(out, folder, "3.png")), folder)
        with open(os.path.join(out, "report.csv"), newline="") as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0][0], "scene")
        self.assertEqual(len(rows), 1 + len(names))
        self.assertEqual([r[0] for r in rows[1:]].count("a,b\n\"c\""), 1)  # quoted, one field
        self.assertIn("'=HYPERLINK(\"x\")", [r[0] for r in rows[1:]])  # a formula made inert
        for r in rows[1:]:
            self.assertEqual(len(r), 7, r)

    # 3 -------------------------------------------------------------------------------------------------------
    def test_03_deep_nesting_crash(self):
        deep = "[" * 200000 + "]" * 200000
        model = self.model_with_config("deep.safetensors", deep)
        self.expect_error(run("info", model), ["deep.safetensors"])
        self.expect_error(run("render", "--model", model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3",
                              "--out", os.path.join(self.tmp, "o3")), ["deep.safetensors"])
        cams = os.path.join(self.fresh("deep_cams"), "opencv_cameras.json")
        with open(cams, "w") as f:
            f.write("{\"frames\": " + deep + "}")
        self.expect_error(run("info", "--data", cams), ["opencv_cameras.json"])
        header = os.path.join(self.tmp, "deep_header.safetensors")
        with open(header, "wb") as f:
            text = ("{\"x\":" + deep + "}").encode()
            f.write(struct.pack("<Q", len(text)) + text)
        self.expect_error(run("info", header), ["deep_header.safetensors"])

    # 4 -------------------------------------------------------------------------------------------------------
    def test_04_undefined_behaviour_on_every_encode(self):
        # Meaningful in the sanitizer build (LACT_SANITIZE, run by scripts/test.sh): UBSan prints "runtime error"
        # for the integer division by the MLP's head_dim of 0 that every encode used to do.
        state = os.path.join(self.tmp, "s4.safetensors")
        rc, so, se = run("encode", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "-o", state)
        self.assertEqual(rc, 0, se)
        self.assertNotIn("runtime error", se)
        self.assertNotIn("AddressSanitizer", se)

    # 5 -------------------------------------------------------------------------------------------------------
    def test_05_silent_overwrite(self):
        model = os.path.join(self.tmp, "model5.safetensors")
        shutil.copy(self.model, model)
        h = digest(model)
        for force in ([], ["--force"]):  # an input is never an output, --force or not
            self.expect_error(run("encode", "--model", model, "--data", self.scene, "--inputs", "0,1,2", "-o", model,
                                  *force), ["model5.safetensors"])
            self.assertEqual(digest(model), h)
        data = os.path.join(self.tmp, "data5")
        shutil.copytree(self.scene, data)
        cams = os.path.join(data, "opencv_cameras.json")
        h = digest(cams)
        self.expect_error(run("path", "orbit", "--data", data, "-o", cams, "--force"), ["opencv_cameras.json"])
        self.assertEqual(digest(cams), h)
        image = os.path.join(data, "images", "000.png")
        self.expect_error(run("encode", "--model", self.model, "--data", data, "--inputs", "0,1,2", "-o", image,
                              "--force"), ["000.png"])
        # An existing file: refused without --force, replaced with it.
        other = os.path.join(self.tmp, "mine.json")
        with open(other, "w") as f:
            f.write("precious")
        self.expect_error(run("path", "turntable", "--frames", "2", "-o", other), ["mine.json", "--force"])
        with open(other) as f:
            self.assertEqual(f.read(), "precious")
        self.ok(run("path", "turntable", "--frames", "2", "-o", other, "--force"))
        with open(other) as f:
            self.assertIn("frames", json.load(f))
        video = os.path.join(self.tmp, "precious.mp4")
        with open(video, "w") as f:
            f.write("precious")
        self.expect_error(run("render", "--state", self.state, "--path", self.path4, "--out",
                              os.path.join(self.tmp, "o5"), "--video", video), ["precious.mp4", "--force"])
        with open(video) as f:
            self.assertEqual(f.read(), "precious")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o5")))

    # 6 -------------------------------------------------------------------------------------------------------
    def test_06_non_atomic_writes(self):
        folder = self.fresh("atomic")
        state = os.path.join(folder, "state.safetensors")
        shutil.copy(self.state, state)
        good = digest(state)
        args = [ARGS.lact, "encode", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "-o", state,
                "--force"]
        rng = random.Random(6)
        for _ in range(8):  # kill -9 at random moments of an encode that replaces the state
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, 0.6))
            p.kill()
            p.wait()
            self.assertEqual(digest(state), good)  # the same encode: the old bytes or the identical new ones
        # A full disk: exit 1, one line, the old state intact, no temporary left behind.
        for name in os.listdir(folder):
            if name != "state.safetensors":
                os.remove(os.path.join(folder, name))
        self.expect_error(run(*args[1:], limit_file_bytes=100000), ["state.safetensors"])
        self.assertEqual(digest(state), good)
        self.assertEqual(os.listdir(folder), ["state.safetensors"])

    # 7 -------------------------------------------------------------------------------------------------------
    def test_07_full_disk_exit_0(self):
        path = os.path.join(self.tmp, "p20.json")
        self.ok(run("path", "turntable", "--frames", "20", "--size", "32x48", "-o", path))
        out = os.path.join(self.tmp, "o7")
        self.expect_error(run("render", "--state", self.state, "--path", path, "--out", out, "--quiet",
                              limit_file_bytes=3000), ["frame_"])
        for f in all_files(out):
            self.assertGreater(os.path.getsize(f), 0, f)
            self.assertFalse(os.path.basename(f).startswith("."), f)  # no temporary left
        # A report on a full disk: the same.
        out = os.path.join(self.tmp, "o7b")
        self.expect_error(run("render", "--state", self.state, "--targets", "3,4", "--out", out,
                              limit_file_bytes=2000), [])
        for f in all_files(out):
            self.assertGreater(os.path.getsize(f), 0, f)

    # 8 -------------------------------------------------------------------------------------------------------
    def test_08_stale_frames(self):
        if not self.have_ffmpeg:
            self.skipTest("ffmpeg/ffprobe not installed")
        out = os.path.join(self.tmp, "o8")
        video = os.path.join(self.tmp, "v8.mp4")
        path6 = os.path.join(self.tmp, "p6.json")
        self.ok(run("path", "turntable", "--frames", "6", "--size", "32x48", "-o", path6))
        self.ok(run("render", "--state", self.state, "--path", path6, "--out", out, "--video", video))
        self.assertEqual(self.frames_in(video), 6)
        self.ok(run("render", "--state", self.state, "--path", self.path4, "--out", out, "--video", video, "--force"))
        self.assertEqual(self.frames_in(video), 4)  # this run's frames only, whatever else --out holds

    # 9 -------------------------------------------------------------------------------------------------------
    def test_09_hangs(self):
        folder = self.fresh("fifo")
        fifo = os.path.join(folder, "f.safetensors")
        os.mkfifo(fifo)
        self.expect_error(run("info", fifo, timeout=20), ["f.safetensors"])
        self.expect_error(run("render", "--model", fifo, "--data", self.scene, "--inputs", "0", "--targets", "1",
                              "--out", os.path.join(folder, "o"), timeout=20), ["f.safetensors"])
        cams = os.path.join(folder, "opencv_cameras.json")
        os.mkfifo(cams)
        self.expect_error(run("info", "--data", folder, timeout=20), ["opencv_cameras.json"])
        data = os.path.join(self.tmp, "data9")
        shutil.copytree(self.scene, data)
        os.remove(os.path.join(data, "images", "001.png"))
        os.mkfifo(os.path.join(data, "images", "001.png"))
        self.expect_error(run("render", "--model", self.model, "--data", data, "--inputs", "0,1,2", "--targets", "3",
                              "--out", os.path.join(folder, "o2"), timeout=20), ["001.png"])
        n = struct.unpack("<Q", self.model_bytes[:8])[0]
        config = json.loads(json.loads(self.model_bytes[8:8 + n])["__metadata__"]["config"])
        config["block_config"][1]["params"]["muon_update_steps"] = 1000000000
        model = self.model_with_config("muon.safetensors", json.dumps(config))
        self.expect_error(run("encode", "--model", model, "--data", self.scene, "--inputs", "0,1,2", "-o",
                              os.path.join(folder, "s.safetensors"), timeout=20), ["muon.safetensors",
                                                                                   "muon_update_steps"])
        self.expect_error(run("encode", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "-o",
                              os.path.join(folder, "s.safetensors"), "--threads", "-1", timeout=20), ["--threads"])

    # 10 ------------------------------------------------------------------------------------------------------
    def test_10_no_refusal_before_allocating(self):
        base = ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3", "--out",
                os.path.join(self.tmp, "o10")]
        start = time.time()
        self.expect_error(run(*base, "--size", "40000x40000", timeout=60), ["--size", "GiB"])
        self.expect_error(run(*base, "--size", "8x2147483640"), ["--size"])
        self.assertLess(time.time() - start, 30)
        n = struct.unpack("<Q", self.model_bytes[:8])[0]
        config = json.loads(json.loads(self.model_bytes[8:8 + n])["__metadata__"]["config"])
        config["layers"] = 2000000000
        model = self.model_with_config("layers.safetensors", json.dumps(config))
        start = time.time()
        self.expect_error(run("info", model, timeout=20), ["layers.safetensors", "layers"])
        config["layers"] = 2 ** 32 + 2  # would wrap to 2 as a 32-bit int
        self.expect_error(run("info", self.model_with_config("wrap.safetensors", json.dumps(config))),
                          ["wrap.safetensors", "layers"])
        self.expect_error(run(*(["render", "--model", model] + base[3:]), timeout=20), ["layers.safetensors"])
        self.assertLess(time.time() - start, 10)
        data = os.path.join(self.tmp, "data10")
        shutil.copytree(self.scene, data)
        png_header_only(os.path.join(data, "images", "001.png"), 12000, 8000)
        # Refused from the header, as larger than its 32x48 camera (beyond 64 Mpixel too: test_image_io).
        self.expect_error(run("render", "--model", self.model, "--data", data, "--inputs", "0,1,2", "--targets", "3",
                              "--out", os.path.join(self.tmp, "o10b")), ["001.png", "8000x12000", "larger than"])
        self.expect_error(run("bench", "--size", "2147483647", "--layers", "1", "--dim", "64"), ["--size"])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o10")))

    # 11 ------------------------------------------------------------------------------------------------------
    def test_11_also(self):
        # Argument errors exit 1 with one line.
        self.expect_error(run("render", "--no-such-flag"), ["no-such-flag"])
        self.expect_error(run("encode", "--threads", "x", "--model", self.model, "-o", "x"), ["--threads"])
        # eval-compare names the file that lacks a key.
        good = os.path.join(self.tmp, "o11", "report.json")
        self.ok(run("render", "--state", self.state, "--targets", "3,4", "--out", os.path.dirname(good)))
        bad = os.path.join(self.tmp, "bad_report.json")
        with open(good) as f:
            report = json.load(f)
        del report["scenes"][0]["ssim"]
        with open(bad, "w") as f:
            json.dump(report, f)
        self.expect_error(run("eval-compare", good, bad), ["bad_report.json", "ssim"])
        # Shapes whose element count wraps 2^64, overlapping offsets.
        wrap = os.path.join(self.tmp, "wrap.safetensors")
        with open(wrap, "wb") as f:
            f.write(safetensors_bytes({"t": {"dtype": "F32", "shape": [2 ** 62, 4], "data_offsets": [0, 0]}}))
        self.expect_error(run("info", wrap), ["wrap.safetensors", "overflows"])
        overlap = os.path.join(self.tmp, "overlap.safetensors")
        with open(overlap, "wb") as f:
            f.write(safetensors_bytes({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                       "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, b"\0" * 24))
        self.expect_error(run("info", overlap), ["overlap.safetensors", "overlapping"])
        # `lact path` writes no cameras that render rejects.
        for flag, value in (("--hfov", "0"), ("--hfov", "180"), ("--min-radius", "0"), ("--elevation", "90")):
            self.expect_error(run("path", "turntable", flag, value, "-o", os.path.join(self.tmp, "p11.json")), [flag])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "p11.json")))
        # Errors in a model's or state's metadata name that file, not --size.
        n = struct.unpack("<Q", self.model_bytes[:8])[0]
        header = json.loads(self.model_bytes[8:8 + n])
        header["__metadata__"]["image_size"] = "99999999999x8"
        model = os.path.join(self.tmp, "size_meta.safetensors")
        with open(model, "wb") as f:
            f.write(safetensors_bytes(header, self.model_bytes[8 + n:]))
        line = self.expect_error(run("render", "--model", model, "--data", self.scene, "--inputs", "0,1,2",
                                     "--targets", "3", "--out", os.path.join(self.tmp, "o11b")), ["size_meta"])
        self.assertNotIn("--size", line)
        # encode --scene A works when another scene of the index is broken.
        root = self.fresh("data11")
        a = self.long_lrm_scene(root, "a", "A")
        broken = os.path.join(root, "b", "opencv_cameras.json")
        os.makedirs(os.path.dirname(broken))
        with open(broken, "w") as f:
            f.write("{ not json")
        index = os.path.join(root, "index.json")
        with open(index, "w") as f:
            json.dump([a, broken], f)
        self.ok(run("encode", "--model", self.model, "--data", index, "--scene", "A", "--inputs", "0,1,2", "-o",
                    os.path.join(root, "a.safetensors")))
        # A failed render leaves no --out behind.
        out = os.path.join(self.tmp, "o11c")
        self.expect_error(run("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,9",
                              "--targets", "3", "--out", out), ["--inputs"])
        self.assertFalse(os.path.exists(out))

    # 12: issue 48, class 6 (the earlier rounds' leftovers) --------------------------------------------------
    def state_with(self, name, edit):
        """The encoded state with its metadata changed by `edit(metadata)`."""
        with open(self.state, "rb") as f:
            data = f.read()
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        edit(header["__metadata__"])
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(safetensors_bytes(header, data[8 + n:]))
        return path

    def render_state(self, state, out):
        return run("render", "--state", state, "--targets", "3", "--out", os.path.join(self.tmp, out))

    def test_12_state_metadata_that_disagrees_with_its_tensors(self):
        # An edited field of a state lact wrote is named (the tensors were made at the size, from the inputs, in the
        # frame and with the config it recorded); another version's format is named as such.
        edits = (("height", lambda m: m.update(height=str(int(m["height"]) + 8))),
                 ("inputs", lambda m: m.update(inputs="[0,1]")),
                 ("normalize_poses", lambda m: m.update(normalize_poses="all")),
                 ("config", lambda m: m.update(config=json.dumps(dict(json.loads(m["config"]), dim=64)))),
                 ("input_views", lambda m: m.update(input_views="7")))
        for key, edit in edits:
            state = self.state_with("edited_%s.safetensors" % key, edit)
            self.expect_error(self.render_state(state, "o12_" + key), ["edited_%s.safetensors" % key, "'%s'" % key])
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "o12_" + key)))
        state = self.state_with("v9.safetensors", lambda m: m.update(format="lact scene state v9"))
        self.expect_error(self.render_state(state, "o12_v9"), ["v9.safetensors", "'lact scene state v9'"])
        # lact info described the states render refuses (a newer format, an edited field) and exited 0.
        self.expect_error(run("info", state), ["v9.safetensors", "'lact scene state v9'"])
        self.expect_error(run("info", os.path.join(self.tmp, "edited_height.safetensors")), ["edited_height.safetensors"])
        # A state from before the seal (v1) is still read, and its fields are still checked against each other.
        def old(**fields):
            def edit(m):
                m.update(format="lact scene state v1", **fields)
                m.pop("metadata_seal")
            return edit
        self.ok(self.render_state(self.state_with("v1.safetensors", old()), "o12_v1"))
        for name, fields, words in (("v1_inputs", {"inputs": "[0,1]"}, ["inputs lists 2 views but input_views is 3"]),
                                    ("v1_pose", {"pose_scale": "2"}, ["normalize_poses is 'none' but pose_world"]),
                                    ("v1_height", {"height": "64abc"}, ["metadata 'height' is '64abc'"]),
                                    ("v1_config", {"config": "{}"}, ["metadata 'config' is not the config of"])):
            state = self.state_with(name + ".safetensors", old(**fields))
            self.expect_error(self.render_state(state, "o12_" + name), [name + ".safetensors"] + words)
        # A recorded transform is what --normalize-poses makes, a rigid motion and a scale within camera distances;
        # before, a singular, sheared or huge one reached the cameras and the line blamed "target view 0".
        identity = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
        for name, world, scale, words in (("v1_singular", [0] * 15 + [1], "1", ["metadata pose_world rotation"]),
                                          ("v1_shear", [1, 5] + identity[2:], "1", ["metadata pose_world rotation"]),
                                          ("v1_row", identity[:12] + [0, 0, 5, 1], "1",
                                           ["metadata pose_world has last row"]),
                                          ("v1_far", identity[:3] + [1e300] + identity[4:], "1",
                                           ["metadata pose_world translation"]),
                                          ("v1_tiny", identity, "1e-300", ["metadata pose_scale 1e-300"])):
            state = self.state_with(name + ".safetensors",
                                    old(normalize_poses="inputs", pose_world=json.dumps(world), pose_scale=scale))
            self.expect_error(self.render_state(state, "o12_" + name), [name + ".safetensors"] + words)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "o12_" + name)))

    def model_with_config_text(self):
        n = struct.unpack("<Q", self.model_bytes[:8])[0]
        return json.loads(self.model_bytes[8:8 + n])["__metadata__"]["config"]

    def test_12_state_names_the_model_it_records(self):
        # A relative model path in a state is read from the working directory; when it is not there the line says
        # the state recorded it.
        state = self.state_with("relative.safetensors", lambda m: m.update(model="models/gone.safetensors"))
        self.expect_error(self.render_state(state, "o12_rel"),
                          ["relative.safetensors: records the model models/gone.safetensors (relative to the "
                           "working directory", "no such file", "--model"])

    def test_12_seed_out_of_range(self):
        # CLI11 read "-1" as 2^64-1 and 2^64 as 2^64-1 (strtoull wraps and saturates).
        for seed in ("-1", str(2 ** 64), "0x10", ""):
            self.expect_error(run("render", "--model", self.model, "--data", self.scene, "--inputs", "random:3",
                                  "--seed", seed, "--targets", "4", "--out", os.path.join(self.tmp, "o12s")),
                              ["--seed"])
        self.ok(run("encode", "--model", self.model, "--data", self.scene, "--inputs", "random:3", "--seed",
                    str(2 ** 64 - 1), "-o", os.path.join(self.tmp, "seed_max.safetensors")))

    def test_12_models_with_bytes_outside_every_tensor(self):
        n = struct.unpack("<Q", self.model_bytes[:8])[0]
        header = json.loads(self.model_bytes[8:8 + n])
        data = self.model_bytes[8 + n:]
        tail = os.path.join(self.tmp, "tail.safetensors")
        with open(tail, "wb") as f:
            f.write(self.model_bytes + b"\0" * 16)
        self.expect_error(run("info", tail), ["tail.safetensors", "16 bytes follow the last tensor's data"])
        # A hole: the first tensor (by offset) moved 8 bytes on, the data grown to match.
        first = min((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
        moved = json.loads(json.dumps(header))
        for k in moved:
            if k != "__metadata__":
                moved[k]["data_offsets"] = [o + 8 for o in moved[k]["data_offsets"]]
        hole = os.path.join(self.tmp, "hole.safetensors")
        with open(hole, "wb") as f:
            f.write(safetensors_bytes(moved, b"\0" * 8 + data))
        self.expect_error(run("info", hole), ["hole.safetensors", "bytes 0..8 of the data section belong to no tensor",
                                              first])
        config = json.loads(self.model_with_config_text())
        config["block_config"][-1]["length_dim"] = "xyz"
        model = self.model_with_config("length_dim.safetensors", json.dumps(config))
        self.expect_error(run("info", model), ["length_dim.safetensors", "length_dim", "'xyz'"])

    def test_12_colmap_files_that_are_not_files(self):
        # Named for what they are, never opened (a FIFO would block the read): no "holds no COLMAP model".
        cases = (("cameras.bin", lambda p: os.mkfifo(p), "a FIFO"),
                 ("cameras.bin", lambda p: os.symlink("/dev/zero", p), "a character device"),
                 ("cameras.bin", lambda p: os.symlink(os.path.basename(p), p), "a loop of symbolic links"),
                 ("images.bin", lambda p: os.mkdir(p), "a folder"))
        for i, (name, make, what) in enumerate(cases):
            root = self.fresh("colmap12_%d" % i)
            model = os.path.join(root, "sparse", "0")
            os.makedirs(model)
            os.makedirs(os.path.join(root, "images"))
            for other in ("cameras.bin", "images.bin"):
                if other != name:
                    with open(os.path.join(model, other), "wb") as f:
                        f.write(b"\0" * 8)
            make(os.path.join(model, name))
            line = self.expect_error(run("info", "--data", root, timeout=30), [os.path.join(model, name), what])
            self.assertNotIn("holds no", line)


if __name__ == "__main__":
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
