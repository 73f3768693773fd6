#!/usr/bin/env python3
"""What lact prints is safe for a terminal, what it writes is valid JSON, and what it cannot print is an error.

- No control byte from data (a scene's name, a path, a state's metadata, a report's names) reaches the terminal:
  C0 controls, ESC, DEL, the C1 controls (as UTF-8 U+0080-U+009F and as raw bytes) and bytes that are not UTF-8
  are printed as visible escapes (\\x1b, \\u009b, \\xff) in info --data, info STATE, encode's summary, the render
  table, the progress bar (on a pty), error lines and eval-compare.
- A scene under a folder whose name is not UTF-8 encodes and renders; report.json and the state's metadata hold
  the name escaped (\\xNN) and stay valid JSON, and render --state finds the folder again.
- stdout that cannot be written (/dev/full, a closed pipe) ends in one line and exit 1.
- info MODEL reads a model as render does: every bad model render refuses, info refuses with the same line.

Usage: PYTHONPATH=tests/common:. python3 tests/reliability/terminal_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny --tools tools
"""
import array
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import unittest

from cli_common import FixtureCase, parse_cli_args, read_safetensors, run_on_a_pty, write_safetensors


ARGS = None

# A name built to drive a terminal: set the window title, recolour, clear the screen, the CSI as a C1 control
# (UTF-8 U+009B and the raw byte 0x9b), DEL, a line break and a bidirectional override.
EVIL = b"evil\x1b]0;pwned\x07\x1b[31m\x1b[2J\xc2\x9b6n\x9b\x7f\nline\xe2\x80\xae"


def run(*argv, timeout=120, **kwargs):
    p = subprocess.run([ARGS.lact] + [os.fsencode(a) if isinstance(a, (str, bytes)) else str(a) for a in argv],
                       capture_output=True, timeout=timeout, **kwargs)
    return p.returncode, p.stdout, p.stderr


def control_characters(data, allowed=b"\n"):
    """The characters of `data` a terminal would act on (empty when it is safe to show)."""
    found = [chr(b) for b in data if (b < 0x20 or b == 0x7F) and b not in allowed]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return found + ["not UTF-8 at byte %d" % e.start]
    bidi = set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x2028, 0x2029}
    return found + [c for c in text if 0x80 <= ord(c) <= 0x9F or ord(c) in bidi]


def copy_scene(fixture_scene, folder):
    """The fixture's scene (5 views) under `folder` (bytes: any name the file system allows)."""
    shutil.copytree(os.fsencode(fixture_scene), folder)
    for root, dirs, files in os.walk(folder):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    return folder


class Terminal(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = os.fsencode(cls._tmp.name)
        cls.evil = copy_scene(cls.scene, os.path.join(cls.tmp, EVIL))

    def path(self, *names):
        return os.path.join(self.tmp, *[os.fsencode(n) for n in names])

    def assertSafe(self, data, allowed=b"\n"):
        self.assertEqual(control_characters(data, allowed), [], data)

    def assertOneErrorLine(self, rc, out, err):
        self.assertEqual(rc, 1, err)
        self.assertTrue(err.startswith(b"lact: ") and err.endswith(b"\n") and err.count(b"\n") == 1, err)
        self.assertSafe(err)

    # --- terminal injection -----------------------------------------------------------------------------------

    def test_info_data_escapes_scene_names(self):
        rc, out, err = run("info", "--data", self.evil)
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        self.assertSafe(err)
        self.assertIn(b"evil\\x1b]0;pwned\\x07\\x1b[31m\\x1b[2J\\u009b6n\\x9b\\x7f\\x0aline\\u202e", out)

    def test_info_data_escapes_a_long_lrm_name_and_kmeans_key(self):
        folder = copy_scene(self.scene, self.path("dict_scene"))
        with open(os.path.join(folder, b"opencv_cameras.json")) as f:
            frames = json.load(f)
        key = "fold_8_kmeans_\x1b[5m_input"
        with open(os.path.join(folder, b"opencv_cameras.json"), "w") as f:
            json.dump({"scene_name": "dl3dv\x1b[41m\u009b\u0085", key: [0, 1, 2], "frames": frames}, f)
        rc, out, err = run("info", "--data", folder)
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        self.assertIn(b"scene dl3dv\\x1b[41m\\u009b\\u0085 ", out)
        self.assertIn(b"fold_8_kmeans_\\x1b[5m_input: 3 input views", out)

    def test_encode_summary_and_info_state(self):
        state = self.path("evil_state.safetensors")
        rc, out, err = run("encode", "--model", self.model, "--data", self.evil, "--inputs", "0,1,2", "-o", state)
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        self.assertSafe(err)
        self.assertIn(b"encoded 3 views of evil\\x1b]0;pwned", out)
        rc, out, err = run("info", state)
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        self.assertIn(b"scene: evil\\x1b]0;pwned\\x07", out)
        # Metadata written by hand (any tool can): every value is printed escaped.
        header, data = read_safetensors(state)
        for key in ("model", "data", "scene", "background", "normalize_poses", "inputs", "ttt_variant"):
            header["__metadata__"][key] = "x\x1b[2J\u009b\x00\x7f" + key
        forged = self.path("forged_state.safetensors")
        write_safetensors(forged, header, data)
        rc, out, err = run("info", forged)
        self.assertSafe(out)
        self.assertSafe(err)
        self.assertIn(b"scene: x\\x1b[2J\\u009b\\x00\\x7fscene", out)

    def test_render_table_and_report(self):
        out_dir = self.path("render_evil")
        rc, out, err = run("render", "--model", self.model, "--data", self.evil, "--inputs", "0,1,2", "--targets",
                           "3,4", "--out", out_dir, "--quiet")
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        self.assertSafe(err)
        self.assertIn(b"evil\\x1b]0;pwned\\x07\\x1b", out)
        with open(os.path.join(out_dir, b"report.json"), "rb") as f:
            report = json.loads(f.read().decode("utf-8"))  # strict UTF-8
        self.assertEqual(report["scenes"][0]["name"], os.fsdecode(EVIL).replace("\udc9b", "\\x9b"))

    def test_progress_bar_on_a_pty(self):
        names = ["\x1b[?1049h\x1b]52;c;cHduZWQ=\x07clip", "p\u009b2J\x1b[31mq\u202e"]
        for name in names:
            copy_scene(self.scene, self.path(name))
        index = self.path("index.json")
        with open(index, "w") as f:
            json.dump([name + "/opencv_cameras.json" for name in names], f)
        rc, shown = run_on_a_pty([ARGS.lact, "render", "--model", self.model, "--data", index, "--inputs", "0,1,2",
                                  "--targets", "3,4", "--out", self.path("render_pty")], timeout=60)
        self.assertEqual(rc, 0, shown)
        self.assertIn(b"2/2 scenes", shown)  # the bar was drawn
        self.assertIn(b"\\x1b[?1049h\\x1b]52;", shown)  # the name, cut to its column
        self.assertIn(b"p\\u009b2J\\x1b[31mq\\u202e", shown)
        self.assertSafe(shown, allowed=b"\r\n")

    def test_error_lines(self):
        rc, out, err = run("render", "--model", self.model, "--data", self.evil, "--scene", "no\x1b[31mpe\u009b",
                           "--inputs", "0,1,2", "--targets", "3,4", "--out", self.path("render_err"))
        self.assertOneErrorLine(rc, out, err)
        self.assertIn(b"no\\x1b[31mpe\\u009b", err)
        rc, out, err = run("render", "--fps", "\x1b[31m12\n", "--model", self.model)
        self.assertOneErrorLine(rc, out, err)
        rc, out, err = run("info", self.path(b"missing\x1b]0;t\x07\xff.safetensors"))
        self.assertOneErrorLine(rc, out, err)
        self.assertIn(b"missing\\x1b]0;t\\x07\\xff", err)

    def test_eval_compare(self):
        names = ["a\x1b[31m", "b\u009b2J", "c\x07\x7f"]
        files = []
        for k, psnr in (("A", 20.0), ("B", 21.0)):
            scenes = [{"name": n + k * (i == 2), "psnr": psnr, "ssim": 0.5} for i, n in enumerate(names)]
            path = self.path("report_%s.json" % k)
            with open(path, "w") as f:
                json.dump({"format": "lact report v1", "scenes": scenes, "psnr": psnr}, f)
            files.append(path)
        rc, out, err = run("eval-compare", *files)
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        self.assertIn(b"a\\x1b[31m", out)
        self.assertIn(b"c\\x07\\x7fB", out)

    # --- a scene under a folder whose name is not UTF-8 -------------------------------------------------------

    def test_non_utf8_folder_encode_and_render_state(self):
        folder = copy_scene(self.scene, self.path(b"scene\xff\xfe"))
        state = self.path("latin1_state.safetensors")
        rc, out, err = run("encode", "--model", self.model, "--data", folder, "--inputs", "0,1,2", "-o", state)
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        header, _ = read_safetensors(state)  # strict JSON: the metadata holds the name escaped
        self.assertEqual(header["__metadata__"]["scene"], "scene\\xff\\xfe")
        rc, out, err = run("render", "--state", state, "--targets", "3,4", "--out", self.path("latin1_out"),
                           "--quiet")
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        with open(self.path("latin1_out", "report.json"), "rb") as f:
            report = json.loads(f.read().decode("utf-8"))
        self.assertEqual(report["scenes"][0]["name"], "scene\\xff\\xfe")
        # The same views from the fixture's own folder: the same numbers.
        rc, _, err = run("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets",
                         "3,4", "--out", self.path("plain_out"), "--quiet")
        self.assertEqual(rc, 0, err)
        with open(self.path("plain_out", "report.json")) as f:
            plain = json.load(f)
        self.assertAlmostEqual(report["psnr"], plain["psnr"], places=4)
        rc, out, err = run("info", state)
        self.assertEqual(rc, 0, err)
        self.assertIn(b"scene: scene\\xff\\xfe", out)

    def test_non_utf8_folder_render_data(self):
        folder = copy_scene(self.scene, self.path(b"direct\xe9"))
        out_dir = self.path("direct_out")
        rc, out, err = run("render", "--model", self.model, "--data", folder, "--inputs", "0,1,2", "--targets", "3,4",
                           "--out", out_dir, "--quiet")
        self.assertEqual(rc, 0, err)
        self.assertSafe(out)
        with open(os.path.join(out_dir, b"report.json"), "rb") as f:
            report = json.loads(f.read().decode("utf-8"))
        self.assertEqual(report["scenes"][0]["name"], "direct\\xe9")
        self.assertTrue(report["data"].endswith("direct\\xe9"), report["data"])

    # --- stdout that cannot be written ------------------------------------------------------------------------

    def test_stdout_full(self):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([ARGS.lact, "info", self.model], stdout=full, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (1, b"lact: stdout: No space left on device\n"))

    def test_help_and_version_to_a_full_stdout(self):
        # They exited 0 having printed nothing (CLI11 prints them, and their exit skipped the check of stdout).
        for argv in ([], ["--help"], ["--version"], ["render", "--help"]):
            with open("/dev/full", "wb") as full:
                p = subprocess.run([ARGS.lact] + argv, stdout=full, stderr=subprocess.PIPE, timeout=60)
            lines = p.stderr.decode().splitlines()
            self.assertEqual(p.returncode, 1, argv)
            self.assertEqual(len(lines), 1, (argv, p.stderr))
            self.assertTrue(lines[0].startswith("lact: stdout: "), (argv, p.stderr))
            printed = subprocess.run([ARGS.lact] + argv, capture_output=True, timeout=60)
            self.assertEqual((printed.returncode, printed.stderr), (0, b""), argv)
            self.assertIn(b"lact", printed.stdout)

    def test_stdout_a_closed_pipe(self):
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody reads: the first write fails (EPIPE)
        p = subprocess.run([ARGS.lact, "info", self.model], stdout=write_end, stderr=subprocess.PIPE, timeout=60)
        os.close(write_end)
        self.assertEqual((p.returncode, p.stderr), (1, b"lact: stdout: Broken pipe\n"))

    # --- info validates a model as render does ----------------------------------------------------------------

    def bad_models(self):
        """(name, header, data) for models render must refuse, each made from the fixture's model."""
        header, data = read_safetensors(self.model)
        meta = header["__metadata__"]
        config = json.loads(meta["config"])
        names = sorted(k for k in header if k != "__metadata__")
        big = max(names, key=lambda k: math.prod(header[k]["shape"]))
        two_d = next(k for k in names if len(header[k]["shape"]) == 2 and header[k]["shape"][0] != header[k]["shape"][1])
        start = header[big]["data_offsets"][0]
        cases = []

        def case(name, edit=None, blob=None, meta_edit=None, config_edit=None):
            h = json.loads(json.dumps(header))
            if config_edit:
                c = json.loads(json.dumps(config))
                config_edit(c)
                h["__metadata__"]["config"] = json.dumps(c)
            if meta_edit:
                meta_edit(h["__metadata__"])
            if edit:
                edit(h)
            cases.append((name, h, data if blob is None else blob))

        def poke(offset, value):
            b = bytearray(data)
            b[offset:offset + 4] = struct.pack("<f", value)
            return bytes(b)

        case("nan_weight", blob=poke(start + 40, float("nan")))
        case("inf_weight", blob=poke(start, float("inf")))
        case("wrong_shape", edit=lambda h: h[two_d].update(shape=h[two_d]["shape"][::-1]))
        case("missing_tensor", edit=lambda h: h.pop(names[0]))
        first = header[names[0]]
        extra = dict(first, data_offsets=[len(data), len(data) + first["data_offsets"][1] - first["data_offsets"][0]])
        case("unexpected_tensor", edit=lambda h: h.update({"extra.weight": extra}),
             blob=data + data[first["data_offsets"][0]:first["data_offsets"][1]])
        case("f64_dtype", edit=lambda h: h[big].update(dtype="F64"))
        case("i32_dtype", edit=lambda h: h[big].update(dtype="I32"))
        case("offsets_past_the_end", blob=data[:len(data) // 2])
        case("no_config", meta_edit=lambda m: m.pop("config"))
        case("config_not_json", meta_edit=lambda m: m.update(config="{\"dim\": 96,"))
        case("negative_dim", config_edit=lambda c: c.update(dim=-96))
        case("more_layers", config_edit=lambda c: c.update(layers=config.get("layers", 2) + 1))
        case("patch_zero", config_edit=lambda c: c.update(patch_size=0))
        case("image_size_text", meta_edit=lambda m: m.update(image_size="big"))
        case("input_views_zero", meta_edit=lambda m: m.update(input_views="0"))

        # bf16 weights with a NaN: converted on load, refused like fp32's.
        def to_bf16():
            h = json.loads(json.dumps(header))
            out, offset = b"", 0
            for k in names:
                a, b = header[k]["data_offsets"]
                bits = array.array("I", data[a:b])  # little-endian machine, as the file
                if k == big:
                    bits[3] = 0x7FC00000  # NaN
                raw = array.array("H", [v >> 16 for v in bits]).tobytes()
                h[k] = {"dtype": "BF16", "shape": header[k]["shape"], "data_offsets": [offset, offset + len(raw)]}
                out += raw
                offset += len(raw)
            cases.append(("bf16_nan", h, out))
        to_bf16()
        return cases

    def test_info_refuses_what_render_refuses(self):
        folder = self.path("bad_models")
        os.mkdir(folder)
        cases = self.bad_models()
        self.assertGreaterEqual(len(cases), 10)
        for name, header, data in cases:
            with self.subTest(model=name):
                path = os.path.join(folder, os.fsencode(name) + b".safetensors")
                write_safetensors(path, header, data)
                out_dir = os.path.join(folder, os.fsencode(name) + b"_out")
                rc_render, _, err_render = run("render", "--model", path, "--data", self.scene, "--inputs", "0,1,2",
                                               "--targets", "3,4", "--out", out_dir)
                self.assertOneErrorLine(rc_render, b"", err_render)
                self.assertFalse(os.path.exists(out_dir))
                rc_info, out_info, err_info = run("info", path)
                self.assertOneErrorLine(rc_info, out_info, err_info)
                self.assertEqual(err_info, err_render)
                self.assertEqual(out_info, b"")
        # The good model still describes itself.
        rc, out, err = run("info", self.model)
        self.assertEqual(rc, 0, err)
        self.assertIn(b"parameters:", out)


def main():
    global ARGS
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
