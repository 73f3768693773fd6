#!/usr/bin/env python3
"""One syntax, no ignored flags, messages that say what to do (issue 36 item 8): every size flag is HxW (a single
N: NxN), `view --window` and `bench --size` included; one memory-limit flag (bench's --max-memory-gb refused with a
pointer to --memory-limit); a flag a command would ignore is refused; a state given as --model, a PyTorch
checkpoint as the model and an image as --data are named as such; a size the patch does not divide gets the
nearest ones; a size too small to score fails before any work; a path's default size follows the scene's aspect.

Usage: PYTHONPATH=tests/common:. python3 tests/cli/flags_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
       --data ../shared/data
"""
import json
import os
import subprocess
import sys
import unittest

from cli_common import FixtureCase, one_error_line, parse_cli_args, ran_ok, read_safetensors, write_safetensors

ARGS = None


def run(*argv, timeout=300, env=None):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                       env=env)
    return p.returncode, p.stdout, p.stderr


class Consistency(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.scene = ["--data", cls.index, "--inputs", "0,1,2", "--threads", "1"]

    def file(self, name):
        return os.path.join(self.tmp, name)

    def test_bench_size_is_hxw(self):
        out = self.file("bench.json")
        ran_ok(run("bench", "--models", "lact", "--layers", "2", "--dim", "64", "--views", "2", "--size", "32x48,16",
                   "--repeat", "1", "--warmup", "0", "--threads", "1", "--json", out))
        with open(out) as f:
            rows = json.load(f)["rows"]
        self.assertEqual([(r["height"], r["width"]) for r in rows], [(32, 48), (16, 16)])
        one_error_line(self, run("bench", "--size", "32x", "--layers", "1", "--dim", "64"), ["--size", "HxW"])

    def test_bench_variants_and_models_are_one_choice(self):
        """--variants times TTT variants instead of --models: given both, --models was dropped without a word (a
        run that asked for full attention timed none). Now one line naming both."""
        one_error_line(self, run("bench", "--layers", "1", "--dim", "64", "--variants", "v2", "--models", "lact,full"),
                       ["--variants", "--models"])

    def test_bench_crossover_agrees_with_the_csv(self):
        """The line saying where LaCT's encode overtakes full attention's reads the same ratios as the CSV, whose
        lines name their precision: with one timed run each (no spread to judge by) every ratio is stated, and the
        line's wording follows from the CSV's full/LaCT encode ratios worked out here."""
        csv = self.file("crossover.csv")
        so = ran_ok(run("bench", "--layers", "1", "--dim", "64", "--views", "2,8", "--size", "32", "--repeat", "1",
                        "--warmup", "0", "--threads", "1", "--csv", csv))
        with open(csv) as f:
            lines = f.read().strip().splitlines()
        header = lines[0].split(",")
        self.assertEqual(header[:2], ["precision", "views"])
        rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
        self.assertEqual([(r["precision"], r["views"], r["tokens"]) for r in rows], [("fp32", "2", "32"),
                                                                                    ("fp32", "8", "128")])
        ratios = []
        for r in rows:
            ratio = float(r["full_encode_s"]) / float(r["lact_encode_s"])
            # each of the three written to six significant digits
            self.assertAlmostEqual(float(r["encode_ratio_full_over_lact"]), ratio, delta=3e-5 * ratio)
            ratios.append(ratio)
        crossover = [line for line in so.splitlines() if line.startswith("Encode crossover, fp32 32x32: ")]
        self.assertEqual(len(crossover), 1, so)
        if ratios[0] <= 1 < ratios[1]:
            expected = "LaCT overtakes full attention between 32 tokens"
        elif ratios[0] > 1 and ratios[1] > 1:
            expected = "LaCT encoded faster at every timed count, from 32 tokens"
        elif ratios[0] <= 1 and ratios[1] <= 1:
            expected = "full attention encoded faster at every timed count, up to 128 tokens"
        else:
            expected = "not stated: the ratio crosses 1 more than once"
        self.assertIn(expected, crossover[0])

    def test_one_memory_limit_flag(self):
        one_error_line(self, run("bench", "--layers", "1", "--dim", "64", "--max-memory-gb", "4"),
                       ["--max-memory-gb", "--memory-limit"])
        # --memory-limit skips the sizes estimated over it (as --max-memory-gb did).
        out = self.file("bench_limit.json")
        ran_ok(run("bench", "--models", "lact", "--layers", "2", "--dim", "64", "--views", "2", "--size", "16,128",
                   "--repeat", "1", "--warmup", "0", "--threads", "1", "--memory-limit", "0.001", "--json", out))
        with open(out) as f:
            rows = json.load(f)["rows"]
        self.assertEqual([(r["height"], "memory limit" in r.get("skipped", "")) for r in rows],
                         [(16, False), (128, True)])

    def test_window_is_hxw(self):
        # 500x350 was a valid WxH window; as HxW it is 350 wide, under the 400 minimum.
        rc, so, se = run("view", "--model", self.model, *self.scene, "--window", "500x350")
        if "not built" in se:
            self.skipTest(se.strip())
        one_error_line(self, (rc, so, se), ["--window", "height x width"])

    def test_quiet_is_q_wherever_it_is_a_flag(self):
        """`lact import -q` worked and `lact render -q` answered "there is no flag -q": every command with --quiet
        takes -q too, and it quiets the same."""
        for command in (["encode"], ["render"], ["import"], ["model", "fetch"]):
            rc, so, se = run(*command, "--help")
            self.assertEqual(rc, 0, se)
            self.assertIn("-q,--quiet", so, " ".join(command))
        out = self.file("q_out")
        rc, so, se = run("render", "--model", self.model, *self.scene, "--targets", "3", "--out", out, "-q",
                         "--warnings", "off")
        self.assertEqual((rc, se), (0, ""))
        self.assertTrue(os.path.exists(os.path.join(out, "report.json")))

    def test_flags_a_command_would_ignore_are_refused(self):
        one_error_line(self, run("info", self.model, "--size", "64x64"), ["--size", "needs --data"])
        one_error_line(self, run("info", self.model, "--targets", "3"), ["--targets", "needs --data"])
        ran_ok(run("info", "--data", self.index, "--size", "32x48"))
        out = self.file("p.json")
        one_error_line(self, run("path", "turntable", "--data", self.index, "-o", out), ["--data", "turntable"])
        one_error_line(self, run("path", "interpolate", "--data", self.index, "--radius", "2", "-o", out),
                       ["--radius", "orbit"])
        one_error_line(self, run("path", "orbit", "--data", self.index, "--hfov", "40", "-o", out),
                       ["--hfov", "turntable"])
        one_error_line(self, run("path", "orbit", "--data", self.index, "--background", "black", "-o", out),
                       ["--background"])
        one_error_line(self, run("path", "orbit", "--data", self.index, "--frame", "3", "-o", out),
                       ["did you mean --frames?"])
        self.assertFalse(os.path.exists(out))

    def test_bench_output_files_are_checked_before_any_work(self):
        """bench --gemm-libraries, --lpips, --scaling and --distributed took --json/--csv/--plot, exited 0 and wrote
        nothing; two of those flags naming one file ran the whole bench, wrote the first, then failed on the second
        ("appeared while this run worked"), or with --force left the CSV under the JSON's name."""
        tiny = ["bench", "--models", "lact", "--layers", "1", "--dim", "64", "--views", "2", "--size", "16",
                "--repeat", "1", "--warmup", "0", "--threads", "1"]
        out = self.file("bench_out.json")
        for mode in (["--gemm-libraries"], ["--lpips"], ["--scaling"], ["--distributed", "mpi"]):
            for flag in ("--json", "--csv", "--plot"):
                line = one_error_line(self, run(*tiny, *mode, flag, out), [flag, mode[0], "writes no file"])
                self.assertNotIn("\n", line)
        self.assertFalse(os.path.exists(out))
        for pair, spelled in ((("--json", "--csv"), out), (("--json", "--plot"), out),
                              (("--csv", "--plot"), os.path.join(self.tmp, ".", "bench_out.json"))):
            for force in ([], ["--force"]):
                rc, so, se = run(*tiny, pair[0], out, pair[1], spelled, *force)
                one_error_line(self, (rc, so, se), [pair[1], pair[0], "its own name"])
                self.assertEqual(so, "")  # refused before the first row
                self.assertFalse(os.path.exists(out))
        # A link to the other file is the same file.
        link = self.file("bench_link.csv")
        os.symlink(out, link)
        one_error_line(self, run(*tiny, "--json", out, "--csv", link), ["--csv", "--json"])
        self.assertFalse(os.path.exists(out))
        # Distinct names still write both.
        csv = self.file("bench_out.csv")
        ran_ok(run(*tiny, "--json", out, "--csv", csv))
        with open(out) as f:
            self.assertEqual(len(json.load(f)["rows"]), 1)
        with open(csv) as f:
            self.assertEqual(len(f.read().strip().splitlines()), 2)

    def test_backend_switches_are_checked_on_every_device(self):
        """LACT_ATTENTION, LACT_SPLIT_K and LACT_BF16_ACTIVATIONS act on the CUDA backend only, but a value it would
        refuse is refused on the CPU too, in the CUDA backend's words, before any work (no output file); the values
        it takes run."""
        state = self.file("switches.safetensors")
        encode = ["encode", "--model", self.model, *self.scene, "-o", state]
        refusals = {
            "LACT_ATTENTION": ("cudnnn", "is not cudnn or own (unset: cudnn where it loads)"),
            "LACT_SPLIT_K": ("yes", "is not 0 or 1 (unset: 1, split-K where chosen)"),
            "LACT_BF16_ACTIVATIONS": ("2\x1b[31m", "is not 0 or 1 (unset: 1, bf16 activations at --precision bf16)"),
        }
        for name, (value, why) in refusals.items():
            with self.subTest(name=name):
                line = one_error_line(self, run(*encode, env=dict(os.environ, **{name: value})))
                shown = value.replace("\x1b", "\\x1b")  # a terminal's control byte, printed visibly
                self.assertEqual(line, "lact: %s: '%s' %s" % (name, shown, why))
                self.assertFalse(os.path.exists(state))
        for values in (("own", "0", "0"), ("wmma", "1", "1"), ("", "", "")):
            env = dict(os.environ, LACT_ATTENTION=values[0], LACT_SPLIT_K=values[1], LACT_BF16_ACTIVATIONS=values[2])
            ran_ok(run(*encode, "--force", env=env))
            self.assertTrue(os.path.isfile(state))

    def test_info_devices_checks_the_backend_switches(self):
        """`lact info --devices` makes its backends directly, not through the commands' make_backend: it listed the
        devices and exited 0 with a value every other command refuses. Now the same one line, before any output;
        the values the switches take still list the devices."""
        for name, value in (("LACT_ATTENTION", "cudnnn"), ("LACT_SPLIT_K", "yes"), ("LACT_BF16_ACTIVATIONS", "2")):
            with self.subTest(name=name):
                env = dict(os.environ, **{name: value})
                rc, so, se = run("info", "--devices", env=env)
                line = one_error_line(self, (rc, so, se), [name, "'%s'" % value, "is not"])
                self.assertTrue(line.startswith("lact: %s: " % name), line)
                self.assertEqual(so, "")  # refused before the first device line
        env = dict(os.environ, LACT_ATTENTION="own", LACT_SPLIT_K="0", LACT_BF16_ACTIVATIONS="")
        self.assertIn("cpu ", ran_ok(run("info", "--devices", env=env)))

    def test_scratch_folder_is_checked_before_any_work(self):
        """--scratch names where an encode that does not fit spills; a folder that is missing, not a folder, or not
        writable was found only when an encode spilled. Now one line naming --scratch and the folder, before any
        work (no output file), though this small encode would not spill."""
        state = self.file("scratch.safetensors")
        encode = ["encode", "--model", self.model, *self.scene, "-o", state]
        a_file = self.file("a_file")
        with open(a_file, "w") as f:
            f.write("not a folder\n")
        cases = [(self.file("missing"), "No such file or directory"), (a_file, "is not a folder")]
        if os.geteuid() != 0:  # root writes in any folder its mode forbids
            locked = self.file("locked")
            os.mkdir(locked, 0o555)
            cases.append((locked, "Permission denied"))
        for folder, why in cases:
            with self.subTest(folder=folder):
                line = one_error_line(self, run(*encode, "--scratch", folder))
                self.assertTrue(line.startswith("lact: --scratch %s: " % folder), line)
                self.assertIn(why, line)
                self.assertFalse(os.path.exists(state))
        usable = self.file("scratch")
        os.mkdir(usable)
        ran_ok(run(*encode, "--scratch", usable))
        self.assertEqual(os.listdir(usable), [])  # the probe's file had no name: nothing is left

    def test_files_given_as_the_wrong_thing(self):
        state = self.file("state.safetensors")
        ran_ok(run("encode", "--model", self.model, *self.scene, "-o", state))
        out = self.file("wrong")
        one_error_line(self, run("render", "--model", state, *self.scene, "--targets", "3", "--out", out),
                       ["state.safetensors", "scene state", "--state"])
        pt = os.path.join(self.fx, "model.pt")
        one_error_line(self, run("render", "--model", pt, *self.scene, "--targets", "3", "--out", out),
                       ["model.pt", "PyTorch", "convert it with", "tools.convert_checkpoint"])
        one_error_line(self, run("info", pt), ["model.pt", "convert it with"])
        png = os.path.join(self.fx, "scene", "images", "000.png")
        one_error_line(self, run("render", "--model", self.model, "--data", png, "--inputs", "0", "--targets", "1",
                                 "--out", out), ["000.png", "is an image (PNG)"])

    def test_sizes(self):
        out = self.file("sizes")
        one_error_line(self, run("render", "--model", self.model, *self.scene, "--targets", "3", "--size", "100x100",
                                 "--out", out), ["--size", "96x96 or 104x104"])
        one_error_line(self, run("render", "--model", self.model, *self.scene, "--targets", "3", "--size", "8x8",
                                 "--max-seconds", "1000", "--out", out), ["--size", "8x8", "SSIM", "16x16"])
        self.assertFalse(os.path.exists(os.path.join(out, "report.json")))

    def test_default_path_size_follows_the_aspect(self):
        desk = os.path.join(ARGS.data, "mydesk")
        if not os.path.isdir(desk):
            self.skipTest("no %s" % desk)
        out = self.file("desk_path.json")
        ran_ok(run("path", "orbit", "--data", desk, "--frames", 2, "-o", out))
        with open(out) as f:
            frame = json.load(f)["frames"][0]
        with open(os.path.join(desk, "opencv_cameras.json")) as f:
            view = json.load(f)["frames"][0]
        h, w = frame["h"], frame["w"]
        self.assertEqual((h % 8, w % 8), (0, 0))
        self.assertAlmostEqual(w / h, view["w"] / view["h"], delta=0.05)  # 16:9, not 1:1
        self.assertLess(abs(h * w - 256 * 256), 0.06 * 256 * 256)

    def test_typed_flags_are_refused_as_they_are_read(self):
        # --size, --background and --normalize-poses are parsed with the flags: a bad value is named before the
        # model is opened (a missing model would otherwise be the error) and before any data is read.
        missing = self.file("no_such_model.safetensors")
        for flag, value in (("--background", "purple"), ("--normalize-poses", "sideways"), ("--size", "32x")):
            for command in ("render", "encode"):
                line = one_error_line(self, run(command, "--model", missing, "--data", self.index, "--inputs", "0,1",
                                                flag, value, "-o" if command == "encode" else "--out",
                                                self.file("never_%s" % command)), [flag, value])
                self.assertNotIn("no_such_model", line)
        self.assertFalse(os.path.exists(self.file("never_render")))

    def test_a_state_records_the_background_it_read(self):
        state = self.file("s.safetensors")
        ran_ok(run("encode", "--model", self.model, *self.scene, "--background", "0.25,0.5,1", "-o", state))
        header, data = read_safetensors(state)
        self.assertEqual(header["__metadata__"]["background"], "0.25,0.5,1")  # the value read, as text it reads back
        ran_ok(run("render", "--state", state, "--targets", "3", "--out", self.file("from_state")))
        header["__metadata__"]["background"] = "purple"  # an edited state: refused naming it and the field
        bad = self.file("bad_background.safetensors")
        write_safetensors(bad, header, data)
        one_error_line(self, run("render", "--state", bad, "--targets", "3", "--out", self.file("bad_out")),
                       [bad, "background"])


def main():
    global ARGS
    ARGS, rest = parse_cli_args(__doc__)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
