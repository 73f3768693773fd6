#!/usr/bin/env python3
"""LPIPS against a PyTorch implementation of the lpips package's definition (v0.1, AlexNet and VGG16), on random
weights written in the two published formats (torchvision's alexnet-owt-7be5be79.pth / vgg16-397923af.pth, the lpips
package's alex.pth / vgg.pth): nothing is downloaded.

  --make-case DIR   writes the weights, converts them (python3 -m tools.convert_checkpoint --lpips) and measures
                    image pairs with PyTorch in float64: DIR/lpips.safetensors and DIR/case.safetensors, which
                    tests/unit/core/test_lpips.cpp reads on the CPU and through the GPU backend's code on the emulator.
  --lact LACT --fixture DIR [--mpirun MPIRUN]
                    the converter's refusals, and `lact render --lpips`: each view's LPIPS and the nearest input's
                    against PyTorch, the report and CSV, eval-compare, bad weights files, two ranks' merge; VGG16
                    (torchvision's vgg16 features in float64) through render and, with --python-module DIR,
                    lact.lpips on image pairs down to the smallest side.

Run: PYTHONPATH=tests/common:. /usr/bin/python3 tests/reference/lpips_reference_test.py --lact build/app/lact --fixture ../shared/fixtures/lact_tiny
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn.functional as F

from tools.reference import safetensors_io
from cli_common import ROOT

ARGS = None
# torchvision's alexnet().features: the index of each convolution, its shape (out, in, kernel), stride, padding,
# and whether a 3x3 stride-2 max-pool follows its ReLU.
ALEXNET = ((0, 64, 3, 11, 4, 2, True), (3, 192, 64, 5, 1, 2, True), (6, 384, 192, 3, 1, 1, False),
           (8, 256, 384, 3, 1, 1, False), (10, 256, 256, 3, 1, 1, False))
# torchvision's vgg16().features ("D": 3x3 convolutions with padding 1, "M": a 2x2 stride-2 max-pool), of which
# the lpips package runs the first 30 modules and taps the ReLUs at these indices (relu1_2 ... relu5_3).
VGG16_LAYOUT = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512)
VGG16_TAPS = (3, 8, 15, 22, 29)
VGG16_CHANNELS = (64, 128, 256, 512, 512)
SHIFT = torch.tensor([-.030, -.088, -.188], dtype=torch.float32).double().view(1, 3, 1, 1)  # float32 as in lpips
SCALE = torch.tensor([.458, .448, .450], dtype=torch.float32).double().view(1, 3, 1, 1)


def random_published_weights(seed):
    """(alexnet state dict, linear-layer state dict) with random values, in the published files' keys and shapes."""
    g = torch.Generator().manual_seed(seed)
    alexnet = {}
    for index, outputs, inputs, kernel, _, _, _ in ALEXNET:
        fan_in = inputs * kernel * kernel
        alexnet["features.%d.weight" % index] = torch.randn(outputs, inputs, kernel, kernel, generator=g) * (2.0 / fan_in) ** 0.5
        alexnet["features.%d.bias" % index] = torch.randn(outputs, generator=g) * 0.1
    # The classifier the real file has too (smaller here): the converter must leave it out.
    alexnet["classifier.1.weight"] = torch.randn(16, 32, generator=g)
    alexnet["classifier.1.bias"] = torch.randn(16, generator=g)
    linear = {"lin%d.model.1.weight" % i: torch.rand(1, c[1], 1, 1, generator=g) for i, c in enumerate(ALEXNET)}
    return alexnet, linear


def vgg16_convolutions():
    """torchvision's features index, output and input channels of each of VGG16's thirteen convolutions."""
    index, inputs, out = 0, 3, []
    for item in VGG16_LAYOUT:
        if item == "M":
            index += 1
            continue
        out.append((index, item, inputs))
        index, inputs = index + 2, item  # the convolution and its ReLU
    return out


def random_published_vgg(seed):
    """(vgg16 state dict, linear-layer state dict) with random values, in the published files' keys and shapes."""
    g = torch.Generator().manual_seed(seed)
    features = {}
    for index, outputs, inputs in vgg16_convolutions():
        features["features.%d.weight" % index] = torch.randn(outputs, inputs, 3, 3, generator=g) * (2.0 / (inputs * 9)) ** 0.5
        features["features.%d.bias" % index] = torch.randn(outputs, generator=g) * 0.1
    features["classifier.0.weight"] = torch.randn(16, 32, generator=g)  # left out by the converter
    linear = {"lin%d.model.1.weight" % i: torch.rand(1, c, 1, 1, generator=g) for i, c in enumerate(VGG16_CHANNELS)}
    return features, linear


def write_vgg_weights(folder, seed=61):
    """vgg16-397923af.pth and vgg.pth with random values in `folder`, and the converted file; returns (features,
    linear, converted path)."""
    features, linear = random_published_vgg(seed)
    paths = os.path.join(folder, "vgg16-397923af.pth"), os.path.join(folder, "vgg.pth")
    torch.save(features, paths[0])
    torch.save(linear, paths[1])
    out = os.path.join(folder, "lpips-vgg.safetensors")
    r = convert("--lpips", *paths, "-o", out)
    if r.returncode != 0:
        raise RuntimeError("the converter failed: " + r.stderr)
    return features, linear, out


def write_weights(folder, seed=53):
    """The two published files in `folder`, and the converted one; returns (alexnet, linear, converted path)."""
    alexnet, linear = random_published_weights(seed)
    alexnet_path, linear_path = os.path.join(folder, "alexnet-owt-7be5be79.pth"), os.path.join(folder, "alex.pth")
    torch.save(alexnet, alexnet_path)
    torch.save(linear, linear_path)
    out = os.path.join(folder, "lpips.safetensors")
    r = convert("--lpips", alexnet_path, linear_path, "-o", out)
    if r.returncode != 0:
        raise RuntimeError("the converter failed: " + r.stderr)
    return alexnet, linear, out


def convert(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "tools.convert_checkpoint", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT)


def network_input(image):
    """The lpips package's input: [1, 3, H, W] float64, clamped to [0, 1], mapped to [-1, 1], shifted and scaled."""
    x = torch.from_numpy(np.clip(np.asarray(image, np.float64), 0, 1)).permute(2, 0, 1)[None]
    return (2 * x - 1 - SHIFT) / SCALE


def distance_of_taps(taps_a, taps_b, linear):
    """The lpips package's distance: each tap unit-normalised over channels, squared differences weighted by the
    linear layer, averaged over pixels, summed over taps."""
    def unit(f):
        return f / (torch.sqrt((f ** 2).sum(dim=1, keepdim=True)) + 1e-10)

    total = 0.0
    for i, (fa, fb) in enumerate(zip(taps_a, taps_b)):
        weighted = F.conv2d((unit(fa) - unit(fb)) ** 2, linear["lin%d.model.1.weight" % i].double())
        total += float(weighted.mean(dim=(2, 3)).sum())
    return total


def torch_lpips(a, b, alexnet, linear):
    """LPIPS of two [H, W, 3] images in float64, written from the lpips package's definition."""
    def taps(image):
        x = network_input(image)
        out = []
        for index, _, _, _, stride, padding, pooled in ALEXNET:
            x = F.relu(F.conv2d(x, alexnet["features.%d.weight" % index].double(),
                                alexnet["features.%d.bias" % index].double(), stride=stride, padding=padding))
            out.append(x)
            if pooled:
                x = F.max_pool2d(x, 3, 2)
        return out

    return distance_of_taps(taps(a), taps(b), linear)


def vgg16_features(state):
    """torchvision's vgg16().features (its first 30 modules, float64) with `state`'s weights; where torchvision is
    not installed, the same modules built from VGG16_LAYOUT."""
    try:
        import torchvision
        modules = torchvision.models.vgg16(weights=None).features[:30]
    except ImportError:
        layers, inputs = [], 3
        for item in VGG16_LAYOUT:
            if item == "M":
                layers.append(torch.nn.MaxPool2d(2, 2))
            else:
                layers += [torch.nn.Conv2d(inputs, item, 3, padding=1), torch.nn.ReLU()]
                inputs = item
        modules = torch.nn.Sequential(*layers)
    modules.load_state_dict({k[len("features."):]: v for k, v in state.items() if k.startswith("features.")})
    return modules.double().eval()


def torch_lpips_vgg(a, b, features, linear):
    """LPIPS-VGG of two [H, W, 3] images in float64, as the lpips package's net='vgg' defines it. `features`:
    vgg16_features(...)."""
    def taps(image):
        x = network_input(image)
        out = []
        with torch.no_grad():
            for index, module in enumerate(features):
                x = module(x)
                if index in VGG16_TAPS:
                    out.append(x)
        return out

    return distance_of_taps(taps(a), taps(b), linear)


def make_case(folder):
    os.makedirs(folder, exist_ok=True)
    alexnet, linear, _ = write_weights(folder)
    rng = np.random.default_rng(7)
    pairs = []
    # Sizes: square, the fixture's 32x48 (near the smallest, 31), odd sides, a larger one; the last pair has values
    # outside [0, 1], which LPIPS clamps as PSNR and SSIM do.
    for height, width, spread in ((64, 64, 0.1), (32, 48, 0.3), (37, 53, 0.05), (96, 128, 0.2), (40, 40, 0.8)):
        a = rng.random((height, width, 3)).astype(np.float32)
        b = (a + rng.normal(0, spread, a.shape)).astype(np.float32)
        if spread < 0.5:
            b = np.clip(b, 0, 1)
        pairs.append((a, b))
    tensors = {}
    for i, (a, b) in enumerate(pairs):
        tensors["pair_%d_a" % i], tensors["pair_%d_b" % i] = torch.from_numpy(a), torch.from_numpy(b)
        tensors["expected_%d" % i] = torch.tensor([torch_lpips(a, b, alexnet, linear)], dtype=torch.float32)
    safetensors_io.save(os.path.join(folder, "case.safetensors"), tensors, {"what": "LPIPS reference pairs"})
    print("LPIPS reference case in %s: %s" % (folder, ", ".join("%.6f" % float(tensors["expected_%d" % i])
                                                                 for i in range(len(pairs)))))


# The model cache of these runs: an empty one (a cached lpips.safetensors of the machine's would be measured by
# default); FetchedWeights sets its own.
EMPTY_CACHE = tempfile.mkdtemp(prefix="lact_lpips_cache_")


def lact(*args, env=None):
    env = env or dict(os.environ, XDG_CACHE_HOME=EMPTY_CACHE)
    return subprocess.run([ARGS.lact, *map(str, args)], capture_output=True, text=True, env=env)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def write_scene(folder):
    """The fixture's scene with its views as opaque RGB PNGs (the fixture's composited pixels, rounded to 8 bits):
    lact and PyTorch then see the same pixels. Returns {view: [H, W, 3] float64 in [0, 1]}."""
    from PIL import Image
    expected, _ = safetensors_io.load(os.path.join(ARGS.fixture, "expected.safetensors"))
    views = list(expected["input_images"].numpy()) + list(expected["target_images_gt"].numpy())  # views 0-2, 3-4
    with open(os.path.join(ARGS.fixture, "scene", "opencv_cameras.json")) as f:
        cameras = json.load(f)
    os.makedirs(os.path.join(folder, "images"))
    pixels = {}
    for view, (camera, image) in enumerate(zip(cameras, views)):
        rgb = np.round(np.clip(image.transpose(1, 2, 0), 0, 1) * 255).astype(np.uint8)
        Image.fromarray(rgb, "RGB").save(os.path.join(folder, camera["file_path"]))
        pixels[view] = rgb.astype(np.float64) / 255
    with open(os.path.join(folder, "opencv_cameras.json"), "w") as f:
        json.dump(cameras, f)
    return pixels


class RenderWithLpips(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_lpips_")
        cls.alexnet, cls.linear, cls.weights = write_weights(cls.tmp)
        cls.scene = os.path.join(cls.tmp, "scene")
        cls.pixels = write_scene(cls.scene)
        cls.model = os.path.join(ARGS.fixture, "model.safetensors")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def render(self, out, *extra):
        return lact("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4",
                    "--out", out, "--quiet", *extra)

    def one_line_error(self, r, code=1):
        self.assertEqual(r.returncode, code, r.stdout + r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        return lines[0]

    def test_each_view_and_its_nearest_input_match_pytorch(self):
        out = os.path.join(self.tmp, "with")
        r = self.render(out, "--lpips", self.weights, "--save-npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        report = load_json(os.path.join(out, "report.json"))
        scene = report["scenes"][0]
        for view in scene["views"]:
            truth = self.pixels[view["index"]]
            rendered = np.load(os.path.join(out, "scene", "%d.npy" % view["index"]))
            expected = torch_lpips(rendered, truth, self.alexnet, self.linear)
            baseline = torch_lpips(self.pixels[view["nearest_input"]], truth, self.alexnet, self.linear)
            print("view %d: LPIPS %.8f (PyTorch %.8f), nearest input %d: %.8f (PyTorch %.8f)" % (
                view["index"], view["lpips"], expected, view["nearest_input"], view["lpips_nearest_input"], baseline))
            self.assertAlmostEqual(view["lpips"], expected, delta=1e-5)
            self.assertAlmostEqual(view["lpips_nearest_input"], baseline, delta=1e-5)
        views = scene["views"]
        self.assertAlmostEqual(scene["lpips"], np.mean([v["lpips"] for v in views]), delta=1e-12)
        self.assertAlmostEqual(scene["lpips_nearest_input"], np.mean([v["lpips_nearest_input"] for v in views]),
                               delta=1e-12)
        self.assertAlmostEqual(report["lpips"], scene["lpips"], delta=1e-12)
        self.assertAlmostEqual(report["lpips_nearest_input"], scene["lpips_nearest_input"], delta=1e-12)
        with open(os.path.join(out, "report.csv")) as f:
            rows = list(csv.DictReader(f))
        for row, view in zip(rows, views):  # the CSV's six significant digits
            self.assertAlmostEqual(float(row["lpips"]), view["lpips"], delta=1e-5 * view["lpips"])
            self.assertAlmostEqual(float(row["lpips_nearest_input"]), view["lpips_nearest_input"],
                                   delta=1e-5 * view["lpips_nearest_input"])
        self.assertIn("LPIPS", r.stdout)  # the printed table

    def test_without_lpips_the_report_is_as_before_and_eval_compare_takes_both(self):
        with_lpips, without = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        self.assertEqual(self.render(with_lpips, "--lpips", self.weights).returncode, 0)
        r = self.render(without)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = load_json(os.path.join(without, "report.json"))
        for where in [report] + report["scenes"] + report["scenes"][0]["views"]:
            self.assertFalse([key for key in where if "lpips" in key], where)
        with open(os.path.join(without, "report.csv")) as f:
            header = f.readline().strip()
        self.assertEqual(header, "scene,view,psnr,ssim,psnr_nearest_input,psnr_white,nearest_input")
        self.assertNotIn("LPIPS", r.stdout)
        both = lact("eval-compare", os.path.join(with_lpips, "report.json"), os.path.join(with_lpips, "report.json"))
        self.assertEqual(both.returncode, 0, both.stderr)
        self.assertIn("LPIPS A", both.stdout)  # the per-scene columns
        self.assertIn("overall lpips ", both.stdout)
        self.assertIn("overall lpips_nearest_input", both.stdout)
        one = lact("eval-compare", os.path.join(with_lpips, "report.json"), os.path.join(without, "report.json"))
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertNotIn("lpips", one.stdout.lower())  # only what both measured is compared
        self.assertIn("overall psnr", one.stdout)

    def test_ranks_merge_lpips_as_they_merge_psnr(self):
        if not ARGS.mpirun:
            self.skipTest("no --mpirun (a build without MPI)")
        if os.environ.get("LACT_SANITIZED"):  # OpenMPI's own allocations read as leaks (as for cli_distributed)
            self.skipTest("MPI under the sanitizers")
        one, two = os.path.join(self.tmp, "one"), os.path.join(self.tmp, "two")
        base = ["render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4",
                "--lpips", self.weights, "--quiet", "--threads", "1"]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        r = subprocess.run([ARGS.lact] + base + ["--out", one], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "-q", "-np", "2", ARGS.lact] + base +
                           ["--out", two, "--distributed", "mpi"], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        a, b = load_json(os.path.join(one, "report.json")), load_json(os.path.join(two, "report.json"))
        for va, vb in zip(a["scenes"][0]["views"], b["scenes"][0]["views"]):  # each rank measured one target
            for key in ("lpips", "lpips_nearest_input"):
                self.assertAlmostEqual(va[key], vb[key], delta=1e-5, msg=key)
        for key in ("lpips", "lpips_nearest_input"):
            self.assertAlmostEqual(a[key], b[key], delta=1e-5, msg=key)

    def test_bad_weights_are_one_line_before_any_work(self):
        out = os.path.join(self.tmp, "bad")
        missing = os.path.join(self.tmp, "no_such.safetensors")
        line = self.one_line_error(self.render(out, "--lpips", missing))
        self.assertIn(missing, line)
        line = self.one_line_error(self.render(out, "--lpips", self.model))  # a model is not LPIPS weights
        self.assertIn("not LPIPS weights", line)
        self.assertFalse(os.path.exists(os.path.join(out, "report.json")))
        # Under LPIPS's smallest side: refused naming --size before any work.
        line = self.one_line_error(self.render(out, "--lpips", self.weights, "--size", "24x48"))
        self.assertIn("--size", line)
        self.assertIn("LPIPS", line)
        self.assertFalse(os.path.exists(os.path.join(out, "report.json")))
        # --lpips measures targets: a camera path has none.
        line = self.one_line_error(lact("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2",
                                        "--path", os.path.join(self.tmp, "p.json"), "--lpips", self.weights,
                                        "--out", out))
        self.assertIn("--lpips", line)


def import_lact_module():
    """The `lact` Python module of --python-module (its folder), or None when not given or not importable."""
    if not ARGS.python_module:
        return None
    sys.path.insert(0, ARGS.python_module)
    try:
        import lact as module
    except ImportError:
        return None
    return module


class VggBackbone(unittest.TestCase):
    """LPIPS with VGG16 (the file's metadata decides; --lpips-net checks it) against torchvision's vgg16 features
    run in float64, within the AlexNet case's 1e-5."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_lpips_vgg_")
        cls.features, cls.linear, cls.weights = write_vgg_weights(cls.tmp)
        cls.reference = vgg16_features(cls.features)
        alex_folder = os.path.join(cls.tmp, "alex")
        os.makedirs(alex_folder)
        cls.alexnet, cls.alex_linear, cls.alex_weights = write_weights(alex_folder)
        cls.scene = os.path.join(cls.tmp, "scene")
        cls.pixels = write_scene(cls.scene)
        cls.model = os.path.join(ARGS.fixture, "model.safetensors")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def render(self, out, *extra):
        return lact("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4",
                    "--out", os.path.join(self.tmp, out), "--quiet", *extra)

    def test_image_pairs_match_pytorch(self):
        module = import_lact_module()
        if module is None:
            self.skipTest("no --python-module (a build without the Python module)")
        rng = np.random.default_rng(11)
        worst = 0.0
        # The smallest side (16: four 2x2 pools) both ways, non-square, odd and larger sizes (lact.lpips takes
        # values in [0, 1]; render's clamping is the AlexNet case's).
        for height, width, spread in ((16, 16, 0.2), (16, 23, 0.1), (29, 16, 0.3), (37, 53, 0.05), (64, 64, 0.2),
                                      (24, 96, 0.5)):
            a = rng.random((height, width, 3)).astype(np.float32)
            b = np.clip(a + rng.normal(0, spread, a.shape), 0, 1).astype(np.float32)
            measured = module.lpips(a, b, weights=self.weights)
            expected = torch_lpips_vgg(a, b, self.reference, self.linear)
            print("%dx%d: LPIPS-VGG %.9f (PyTorch %.9f)" % (height, width, measured, expected))
            self.assertAlmostEqual(measured, expected, delta=1e-5)
            self.assertEqual(module.lpips(a, b, weights=self.weights, net="vgg"), measured)
            worst = max(worst, abs(measured - expected))
        print("LPIPS-VGG against PyTorch: max abs difference %.3g" % worst)
        a = np.full((15, 40, 3), 0.5, np.float32)
        with self.assertRaisesRegex(module.Error, "VGG16's poolings need at least 16 pixels"):
            module.lpips(a, a, weights=self.weights)
        with self.assertRaisesRegex(module.Error, "^net: vgg, but .* holds LPIPS weights with AlexNet"):
            module.lpips(a, a, weights=self.alex_weights, net="vgg")

    def test_render_matches_pytorch_and_the_flag_checks_the_file(self):
        r = self.render("vgg", "--lpips", self.weights, "--save-npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        views = load_json(os.path.join(self.tmp, "vgg", "report.json"))["scenes"][0]["views"]
        for view in views:
            truth = self.pixels[view["index"]]
            rendered = np.load(os.path.join(self.tmp, "vgg", "scene", "%d.npy" % view["index"]))
            expected = torch_lpips_vgg(rendered, truth, self.reference, self.linear)
            baseline = torch_lpips_vgg(self.pixels[view["nearest_input"]], truth, self.reference, self.linear)
            print("view %d: LPIPS-VGG %.8f (PyTorch %.8f), nearest input %.8f (PyTorch %.8f)" % (
                view["index"], view["lpips"], expected, view["lpips_nearest_input"], baseline))
            self.assertAlmostEqual(view["lpips"], expected, delta=1e-5)
            self.assertAlmostEqual(view["lpips_nearest_input"], baseline, delta=1e-5)
        r = self.render("flag", "--lpips", self.weights, "--lpips-net", "vgg")
        self.assertEqual(r.returncode, 0, r.stderr)
        flagged = load_json(os.path.join(self.tmp, "flag", "report.json"))["scenes"][0]["views"]
        self.assertEqual([v["lpips"] for v in flagged], [v["lpips"] for v in views])
        self.assertEqual(load_json(os.path.join(self.tmp, "vgg", "report.json"))["lpips_net"], "vgg")
        r = self.render("alex", "--lpips", self.alex_weights)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(load_json(os.path.join(self.tmp, "alex", "report.json"))["lpips_net"], "alex")
        both = lact("eval-compare", *(os.path.join(self.tmp, f, "report.json") for f in ("alex", "vgg")))
        self.assertEqual(both.returncode, 0, both.stderr)
        self.assertIn("LPIPS is measured with --lpips-net alex and B's with vgg: not comparable", both.stderr)
        same = lact("eval-compare", *(os.path.join(self.tmp, f, "report.json") for f in ("flag", "vgg")))
        self.assertNotIn("not comparable", same.stderr)
        # An AlexNet file given as VGG16: one line before any work.
        r = self.render("mismatch", "--lpips", self.alex_weights, "--lpips-net", "vgg")
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("--lpips-net", lines[0])
        self.assertIn("AlexNet", lines[0])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "mismatch", "report.json")))

    def test_the_converter_tells_the_backbone_and_refuses_a_mismatch(self):
        tensors, metadata = safetensors_io.load(self.weights)
        self.assertEqual(metadata["format"], "lpips v0.1 vgg16")
        self.assertEqual(len(tensors), 13 * 2 + 5)  # the classifier left out
        self.assertTrue(torch.equal(tensors["conv12.weight"], self.features["features.28.weight"]))
        self.assertTrue(torch.equal(tensors["conv4.bias"], self.features["features.10.bias"]))
        self.assertTrue(torch.equal(tensors["lin3.weight"], self.linear["lin3.model.1.weight"].reshape(512)))
        alex_tensors, alex_metadata = safetensors_io.load(self.alex_weights)
        self.assertEqual(alex_metadata["format"], "lpips v0.1 alexnet")  # AlexNet files read as before
        paths = {}
        for name, state in (("vgg16.pth", self.features), ("vgg.pth", self.linear), ("alexnet.pth", self.alexnet),
                            ("alex.pth", self.alex_linear)):
            paths[name] = os.path.join(self.tmp, "refused_" + name)
            torch.save(state, paths[name])
        wrong = dict(self.features, **{"features.10.weight": torch.zeros(256, 128, 5, 5)})
        paths["wrong.pth"] = os.path.join(self.tmp, "wrong.pth")
        torch.save(wrong, paths["wrong.pth"])
        out = os.path.join(self.tmp, "refused.safetensors")
        for backbone, linear, words in (("alexnet.pth", "vgg.pth", ("vgg.pth", "lin1.model.1.weight", "AlexNet")),
                                        ("vgg16.pth", "alex.pth", ("alex.pth", "lin1.model.1.weight", "VGG16")),
                                        ("wrong.pth", "vgg.pth", ("wrong.pth", "features.10.weight", "[256, 128, 5, 5]")),
                                        ("vgg.pth", "vgg16.pth", ("vgg.pth", "features.0.weight"))):
            r = convert("--lpips", paths[backbone], paths[linear], "-o", out)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            for word in words:
                self.assertIn(word, lines[0])
            self.assertFalse(os.path.exists(out))


class FetchedWeights(unittest.TestCase):
    """lact model fetch lpips from a loopback mirror of the two publishers' paths (tests/common/hub_server.py), then
    render measuring LPIPS by default with the cached weights, as with --lpips FILE."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lact_lpips_fetch_")
        alexnet, linear = random_published_weights(7)
        cls.files = {}
        vgg, vgg_linear = random_published_vgg(9)
        for name, state in (("/models/alexnet-owt-7be5be79.pth", alexnet),
                            ("/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/alex.pth", linear),
                            ("/models/vgg16-397923af.pth", vgg),
                            ("/richzhang/PerceptualSimilarity/raw/master/lpips/weights/v0.1/vgg.pth", vgg_linear)):
            path = os.path.join(cls.tmp, os.path.basename(name))
            torch.save(state, path)
            with open(path, "rb") as f:
                cls.files[name] = f.read()
        cls.scene = os.path.join(cls.tmp, "scene")
        write_scene(cls.scene)
        cls.model = os.path.join(ARGS.fixture, "model.safetensors")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        from hub_server import Hub
        self.hub = Hub(self.files)
        self.cache = tempfile.mkdtemp(dir=self.tmp)
        self.env = dict(os.environ, XDG_CACHE_HOME=self.cache, LACT_HUB=self.hub.url)

    def tearDown(self):
        self.hub.close()

    def render(self, out, *extra):
        return lact("render", "--model", self.model, "--data", self.scene, "--inputs", "0,1,2", "--targets", "3,4",
                    "--out", os.path.join(self.tmp, out), *extra, env=self.env)

    def report(self, out):
        return load_json(os.path.join(self.tmp, out, "report.json"))

    def test_fetched_weights_are_measured_by_default_as_the_converted_files(self):
        r = self.render("before")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("LPIPS not measured: `lact model fetch lpips`", r.stderr)
        self.assertNotIn("lpips", self.report("before"))
        asked = self.render("asked", "--lpips")
        self.assertEqual(asked.returncode, 1, asked.stderr)
        self.assertIn("--lpips: no LPIPS weights are cached", asked.stderr)
        fetched = lact("model", "fetch", "lpips", env=self.env)
        self.assertEqual(fetched.returncode, 0, fetched.stderr)
        cached = os.path.join(self.cache, "lact", "lpips.safetensors")
        self.assertIn(cached, fetched.stdout)
        self.assertIn(cached, lact("model", "list", env=self.env).stdout)
        self.assertFalse([f for f in os.listdir(os.path.dirname(cached)) if f.endswith((".pth", ".part"))])
        by_hand = os.path.join(self.tmp, "by_hand.safetensors")
        names = [os.path.join(self.tmp, n) for n in ("alexnet-owt-7be5be79.pth", "alex.pth")]
        converted = lact("model", "convert", "--lpips", *names, "-o", by_hand, env=self.env)
        self.assertEqual(converted.returncode, 0, converted.stderr)
        default = self.render("default")
        self.assertEqual(default.returncode, 0, default.stderr)
        self.assertIn("LPIPS measured with the cached weights", default.stderr)
        given = self.render("given", "--lpips", by_hand, "--quiet")
        self.assertEqual(given.returncode, 0, given.stderr)
        a, b = self.report("default")["scenes"][0]["views"], self.report("given")["scenes"][0]["views"]
        for va, vb in zip(a, b):
            self.assertEqual(va["lpips"], vb["lpips"])
            self.assertEqual(va["lpips_nearest_input"], vb["lpips_nearest_input"])
        alone = self.render("alone", "--lpips")  # asked for: the cached weights, and no line about them
        self.assertEqual(alone.returncode, 0, alone.stderr)
        self.assertNotIn("LPIPS measured with", alone.stderr)
        self.assertEqual([v["lpips"] for v in self.report("alone")["scenes"][0]["views"]], [v["lpips"] for v in a])
        off = self.render("off", "--no-lpips", "--quiet")
        self.assertEqual(off.returncode, 0, off.stderr)
        self.assertNotIn("lpips", self.report("off"))

    def test_lpips_net_vgg_measures_with_the_fetched_vgg_weights(self):
        asked = self.render("asked_vgg", "--lpips-net", "vgg", "--quiet")
        self.assertEqual(asked.returncode, 1, asked.stderr)
        self.assertEqual(len(asked.stderr.strip().splitlines()), 1, asked.stderr)
        self.assertIn("`lact model fetch lpips-vgg` fetches them", asked.stderr)
        fetched = lact("model", "fetch", "lpips-vgg", "--quiet", env=self.env)
        self.assertEqual(fetched.returncode, 0, fetched.stderr)
        cached = os.path.join(self.cache, "lact", "lpips-vgg.safetensors")
        self.assertIn(cached, fetched.stdout)
        self.assertEqual(safetensors_io.load(cached)[1]["format"], "lpips v0.1 vgg16")
        self.assertFalse([f for f in os.listdir(os.path.dirname(cached)) if f.endswith((".pth", ".part"))])
        listed = lact("model", "list", env=self.env).stdout
        self.assertIn(cached, listed)
        self.assertIn("lpips      ", listed.replace("lpips-vgg", ""))  # AlexNet's still listed, not fetched
        by_hand = os.path.join(self.tmp, "by_hand_vgg.safetensors")
        names = [os.path.join(self.tmp, n) for n in ("vgg16-397923af.pth", "vgg.pth")]
        converted = lact("model", "convert", "--lpips", *names, "-o", by_hand, "--force", env=self.env)
        self.assertEqual(converted.returncode, 0, converted.stderr)
        self.assertIn("LPIPS v0.1 VGG16", converted.stdout)
        flagged = self.render("flag_vgg", "--lpips-net", "vgg", "--quiet")
        self.assertEqual(flagged.returncode, 0, flagged.stderr)
        given = self.render("given_vgg", "--lpips", by_hand, "--quiet")
        self.assertEqual(given.returncode, 0, given.stderr)
        a, b = self.report("flag_vgg")["scenes"][0]["views"], self.report("given_vgg")["scenes"][0]["views"]
        self.assertEqual([v["lpips"] for v in a], [v["lpips"] for v in b])
        plain = self.render("plain", "--quiet")  # the default stays AlexNet's, which is not fetched here
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertNotIn("lpips", self.report("plain"))

    def test_a_file_that_is_not_the_published_one_is_refused(self):
        self.hub.no_sha = True  # as the publishers: no SHA-256 stated, so the name's prefix is checked
        r = lact("model", "fetch", "lpips", "--quiet", env=self.env)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("does not start with 7be5be79", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cache, "lact", "lpips.safetensors")))


class Converter(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lact_lpips_convert_")
        self.alexnet, self.linear = random_published_weights(3)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def refused(self, alexnet, linear, *words):
        a, l, out = (os.path.join(self.tmp, n) for n in ("a.pth", "l.pth", "out.safetensors"))
        for value, path in ((alexnet, a), (linear, l)):
            if isinstance(value, bytes):
                with open(path, "wb") as f:
                    f.write(value)
            else:
                torch.save(value, path)
        r = convert("--lpips", a, l, "-o", out)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        for word in words:
            self.assertIn(word, lines[0])
        self.assertFalse(os.path.exists(out))

    def test_the_published_formats_convert(self):
        a, l, out = (os.path.join(self.tmp, n) for n in ("a.pth", "l.pth", "out.safetensors"))
        torch.save(self.alexnet, a)
        torch.save(self.linear, l)
        r = convert("--lpips", a, l, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        tensors, metadata = safetensors_io.load(out)
        self.assertEqual(metadata["format"], "lpips v0.1 alexnet")
        self.assertEqual(len(tensors), 15)  # the classifier left out
        self.assertTrue(torch.equal(tensors["conv3.weight"], self.alexnet["features.8.weight"]))
        self.assertTrue(torch.equal(tensors["lin2.weight"], self.linear["lin2.model.1.weight"].reshape(384)))

    def test_malformed_files_are_refused_with_one_line(self):
        no_conv = dict(self.alexnet)
        del no_conv["features.8.weight"]
        self.refused(no_conv, self.linear, "a.pth", "features.8.weight")
        wrong = dict(self.linear, **{"lin1.model.1.weight": torch.rand(1, 64, 1, 1)})
        self.refused(self.alexnet, wrong, "l.pth", "lin1.model.1.weight", "[1, 64, 1, 1]")
        nan = dict(self.alexnet)
        nan["features.0.bias"] = self.alexnet["features.0.bias"].clone()
        nan["features.0.bias"][3] = float("nan")
        self.refused(nan, self.linear, "a.pth", "features.0.bias", "NaN")
        self.refused(b"not a torch file", self.linear, "a.pth", "cannot read")
        self.refused(self.alexnet, [1, 2, 3], "l.pth", "no state dict")
        self.refused(self.linear, self.alexnet, "a.pth", "features.0.weight")  # the two files swapped


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--make-case", help="write the reference case for tests/unit/core/test_lpips.cpp into this folder")
    ap.add_argument("--lact")
    ap.add_argument("--fixture")
    ap.add_argument("--mpirun", help="also check that ranks (--distributed mpi) merge LPIPS")
    ap.add_argument("--python-module", help="the folder of the lact Python module (LPIPS-VGG on image pairs)")
    ARGS, rest = ap.parse_known_args()
    if ARGS.make_case:
        make_case(ARGS.make_case)
        return 0
    if not ARGS.lact or not ARGS.fixture:
        ap.error("give --make-case DIR, or --lact and --fixture")
    return 0 if unittest.main(argv=[sys.argv[0]] + rest, exit=False).result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
