#!/usr/bin/env python3
"""End-to-end tests of `lact view` (the real-time viewer), in its scripted mode, on a real window.

Run under a virtual X display (CTest does: xvfb-run, Mesa's software OpenGL):
  xvfb-run -a -s "-screen 0 1600x1000x24" env PYTHONPATH=tests/common:. python3 tests/cli/view_test.py --lact build/app/lact \
      --fixture ../shared/fixtures/lact_tiny --data ../shared/data
Checks that the view on screen is what `lact render` renders for the same camera (the novel view read back from
its texture, and its region of the window screenshot), that the PSNR/SSIM the panel shows are render's, that a
scripted orbit reports its frame rates, that a saved state reopens, and that errors end with one line and exit
code 1 (before the window opens, and after it in a scripted run). Set LACT_VIEWER_BENCH=1 to also print the
orbit frame rates of the fixture model at 32x48 and on gso_toy at 64x64.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import unittest
import zlib

import numpy as np
from cli_common import ROOT, FixtureCase, use_fixture

ARGS = None


def run(*argv, timeout=300):
    p = subprocess.run([ARGS.lact] + [str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def read_png(path):
    """8-bit RGB or RGBA PNG -> uint8 array [H, W, C] (zlib + the five PNG filters)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6), "%s: only 8-bit RGB/RGBA" % path
    channels = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8)
    stride = width * channels
    out = np.zeros((height, stride), dtype=np.int32)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, row = line[0], line[1:].astype(np.int32)
        if kind == 0:
            cur = row
        elif kind == 2:
            cur = (row + previous) & 255
        else:
            cur = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                a = cur[x - channels] if x >= channels else 0
                b = previous[x]
                c = previous[x - channels] if x >= channels else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:  # Paeth
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (row[x] + pred) & 255
        out[y] = cur
        previous = cur
    return out.reshape(height, width, channels).astype(np.uint8)


def parse_stats(stdout):
    stats = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and "." in parts[0]:
            try:
                stats[parts[0]] = float(parts[1])
            except ValueError:
                stats[parts[0]] = parts[1]
    return stats


def lpips_weights():
    """LPIPS weights (random, in lact's format) from tests/reference/lpips_reference_test.py --make-case, where CTest made
    them (LACT_LPIPS_CASE); None elsewhere."""
    path = os.path.join(os.environ.get("LACT_LPIPS_CASE", ""), "lpips.safetensors")
    return path if os.environ.get("LACT_LPIPS_CASE") and os.path.exists(path) else None


def view_region(window, info):
    """The novel view in the window screenshot, one sample per working-size pixel (block centres)."""
    region = info["view_region"]
    zoom, x, y = region["zoom"], region["x"], region["y"]
    height, width = info["camera"]["h"], info["camera"]["w"]
    rows = [int(y + (i + 0.5) * zoom) for i in range(height)]
    cols = [int(x + (j + 0.5) * zoom) for j in range(width)]
    return window[np.ix_(rows, cols)][..., :3]


def frustum_segments(cam, depth, viewer, near=1e-3):
    """The 8 edges of `cam`'s pyramid (its centre and its image rectangle at `depth`) in `viewer`'s image pixels,
    clipped at z = near in the viewer's camera space: [(x0, y0, x1, y1)]. Cameras as dicts of w h fx fy cx cy and
    c2w (4x4)."""
    c2w, v2w = np.array(cam["c2w"], dtype=np.float64), np.array(viewer["c2w"], dtype=np.float64)
    corners = [(0, 0), (cam["w"], 0), (cam["w"], cam["h"]), (0, cam["h"])]
    local = [np.zeros(3)] + [np.array([(u - cam["cx"]) / cam["fx"], (v - cam["cy"]) / cam["fy"], 1.0]) * depth
                             for u, v in corners]
    w2v = np.linalg.inv(v2w)
    seen = [(w2v @ c2w @ np.append(p, 1.0))[:3] for p in local]
    out = []
    for i, j in ((0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (2, 3), (3, 4), (4, 1)):
        a, b = seen[i].copy(), seen[j].copy()
        if a[2] < near and b[2] < near:
            continue
        if a[2] < near:
            a = b + (near - b[2]) / (a[2] - b[2]) * (a - b)
        if b[2] < near:
            b = a + (near - a[2]) / (b[2] - a[2]) * (b - a)
        project = lambda q: (viewer["fx"] * q[0] / q[2] + viewer["cx"], viewer["fy"] * q[1] / q[2] + viewer["cy"])
        out.append(project(a) + project(b))
    return out


class ViewerTest(FixtureCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.gso = os.path.join(os.path.abspath(ARGS.data), "gso_sample_index.json")
        cls.fixture_flags = ["--model", cls.model, "--data", cls.index, "--inputs", "0,1,2", "--threads", "2"]
        # The reference: `lact render` of the test views 3 and 4.
        cls.rendered = os.path.join(cls.tmp, "render")
        rc, so, se = run("render", *cls.fixture_flags, "--targets", "3,4", "--out", cls.rendered, "--quiet")
        assert rc == 0, "lact render failed: %s%s" % (so, se)
        with open(os.path.join(cls.rendered, "report.json")) as f:
            cls.report = json.load(f)

    def view(self, *argv, timeout=300):
        rc, so, se = run("view", *argv, timeout=timeout)
        self.assertEqual(rc, 0, "lact view failed (rc %d):\n%s\n%s" % (rc, so, se))
        return parse_stats(so)

    def report_view(self, report, index):
        for v in report["scenes"][0]["views"]:
            if v["index"] == index:
                return v
        self.fail("view %d not in the report" % index)

    def check_screenshot(self, shot, reference_png, height, width):
        """The novel view (texture read-back and the window's view region) against `lact render`'s PNG."""
        stem = shot[:-len(".png")]
        with open(stem + ".json") as f:
            info = json.load(f)
        reference = read_png(reference_png).astype(np.float64)
        self.assertEqual(reference.shape, (height, width, 3))
        view = read_png(stem + ".view.png").astype(np.float64)
        self.assertEqual(view.shape, reference.shape)
        self.assertLessEqual(np.abs(view - reference).mean(), 2.0, "view texture differs from lact render")
        window = read_png(shot).astype(np.float64)
        self.assertEqual(list(window.shape[:2]), [info["window_size"][1], info["window_size"][0]])
        region = view_region(window, info)
        self.assertEqual(region.shape, reference.shape)
        self.assertLessEqual(np.abs(region - reference).mean(), 2.0, "window's view region differs from lact render")
        # The zoom is an integer and nearest filtering shows every rendered pixel as a uniform block.
        zoom = info["view_region"]["zoom"]
        self.assertEqual(zoom, int(zoom))
        x, y = info["view_region"]["x"], info["view_region"]["y"]
        block = window[y:y + int(zoom), x:x + int(zoom), :3]
        self.assertEqual(np.ptp(block.reshape(-1, 3), axis=0).max(), 0)
        return info

    def test_starts_on_the_first_test_view(self):
        # Without --camera the viewer opens on a test view, whose PSNR is of a novel view, not on an input.
        stats = self.view(*self.fixture_flags, "--targets", "4,3", "--frames", 5, "--exit", "--print-stats")
        self.assertEqual(stats["viewer.view"], 4)
        self.assertEqual(stats["viewer.view_role"], "test")

    def test_test_view_matches_render(self):
        shot = os.path.join(self.tmp, "shot3", "out.png")
        stats = self.view(*self.fixture_flags, "--targets", "3,4", "--camera", 3, "--frames", 30, "--screenshot", shot,
                          "--exit", "--print-stats")
        expected = self.report_view(self.report, 3)
        self.assertEqual(stats["viewer.view"], 3)
        self.assertEqual(stats["viewer.view_role"], "test")
        self.assertAlmostEqual(stats["viewer.psnr"], expected["psnr"], delta=1e-3)
        self.assertAlmostEqual(stats["viewer.ssim"], expected["ssim"], delta=1e-3)
        # The Quality panel's baseline: the nearest input photo's PSNR, as lact render's report has it.
        self.assertEqual(stats["viewer.nearest_input"], expected["nearest_input"])
        self.assertAlmostEqual(stats["viewer.psnr_nearest_input"], expected["psnr_nearest_input"], delta=1e-3)
        for key in ("viewer.fps", "viewer.frame_ms", "viewer.render_ms", "viewer.novel_views_per_s", "viewer.encode_s"):
            self.assertIn(key, stats)
        self.assertEqual(stats["viewer.render_size"], "32x48")
        info = self.check_screenshot(shot, os.path.join(self.rendered, "scene", "3.png"), 32, 48)
        self.assertEqual(info["scene_view"], 3)
        self.assertAlmostEqual(info["psnr"], expected["psnr"], delta=1e-3)
        # The pose beside the screenshot is the dataset's camera of view 3.
        with open(os.path.join(self.fx, "scene", "opencv_cameras.json")) as f:
            w2c = np.array(json.load(f)[3]["w2c"])
        np.testing.assert_allclose(np.array(info["camera"]["c2w"]), np.linalg.inv(w2c), atol=1e-6)

    def test_ground_truth_and_error_map_shown(self):
        shot = os.path.join(self.tmp, "shot4", "out.png")
        stats = self.view(*self.fixture_flags, "--targets", "3,4", "--camera", 4, "--frames", 5, "--show-gt",
                          "--show-error", "--screenshot", shot, "--exit", "--print-stats")
        self.assertAlmostEqual(stats["viewer.psnr"], self.report_view(self.report, 4)["psnr"], delta=1e-3)
        info = self.check_screenshot(shot, os.path.join(self.rendered, "scene", "4.png"), 32, 48)
        # The second tile is the ground truth (the fixture's view 4 composited on white), the third the error map.
        self.assertEqual(info["view_region"]["tiles"], 3)
        window = read_png(shot).astype(np.float64)
        shifted = dict(info, view_region=dict(info["view_region"]))
        shifted["view_region"]["x"] = info["view_region"]["x"] + info["view_region"]["tile_step"]
        truth = view_region(window, shifted)
        rgba = read_png(os.path.join(self.fx, "scene", "images", "004.png")).astype(np.float64)
        if rgba.shape[2] == 4:
            alpha = rgba[..., 3:] / 255
            expected = rgba[..., :3] * alpha + 255 * (1 - alpha)
        else:
            expected = rgba
        self.assertLessEqual(np.abs(truth - expected).mean(), 2.0, "the ground-truth tile differs")
        shifted["view_region"]["x"] = info["view_region"]["x"] + 2 * info["view_region"]["tile_step"]
        error = view_region(window, shifted)
        rendered = read_png(os.path.join(self.rendered, "scene", "4.png")).astype(np.float64)
        self.assertGreater(error.mean(), 10)  # black-red-yellow-white heat map of a poor render: not empty
        # Black where the render equals the truth, brighter with the error: correlated with |render - truth|.
        diff = np.abs(rendered - expected).mean(axis=2).ravel()
        self.assertGreater(np.corrcoef(diff, error.mean(axis=2).ravel())[0, 1], 0.5)

    def panel_fit(self, name, *flags):
        """The side panel's content against its room, at the default window size (no --window)."""
        shot = os.path.join(self.tmp, "panel_" + name, "shot.png")
        self.view(*flags, "--frames", 5, "--screenshot", shot, "--exit")
        with open(shot[:-len(".png")] + ".json") as f:
            info = json.load(f)
        self.assertEqual(info["window_size"], [1280, 800])  # the default --window 800x1280 (HxW)
        return info["panel"]

    def test_panels_fit_the_default_window(self):
        """Every section's text within the panel's width (nothing clipped at its right edge) and all sections, open
        as they start, within its height (no scrolling): on a test view with its PSNR, SSIM, baseline and error
        map, and on the desk's scene-like cameras with the object model's two warnings wrapped in the panel."""
        desk = os.path.join(os.path.abspath(ARGS.data), "mydesk")
        shipped = os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors")
        cases = [("test_view", self.fixture_flags + ["--targets", "3,4", "--camera", 3, "--show-error"])]
        if os.path.exists(os.path.join(desk, "opencv_cameras.json")):
            # With LPIPS weights too where the test has them: the quality section's scores at their longest.
            lpips = ["--lpips", lpips_weights()] if lpips_weights() else []
            cases.append(("warnings", ["--model", shipped, "--data", desk, "--inputs", "uniform:8", "--size",
                                       "64x112", "--threads", "2"] + lpips))
        for name, flags in cases:
            panel = self.panel_fit(name, *flags)
            self.assertGreater(panel["content_width"], 200, panel)  # measured, not an empty panel
            self.assertGreater(panel["content_height"], 400, panel)
            self.assertLessEqual(panel["content_width"], panel["width"], "%s: text clipped: %s" % (name, panel))
            self.assertLessEqual(panel["content_height"], panel["height"], "%s: panel scrolls: %s" % (name, panel))
            self.assertFalse(panel["scrollbar"], "%s: panel scrolls: %s" % (name, panel))

    def test_lpips_beside_psnr(self):
        """With LPIPS weights the viewer measures a test view's LPIPS and its nearest input's, as lact render's
        report has them (the panel shows them beside SSIM and the baseline's PSNR); --no-lpips leaves them out."""
        weights = lpips_weights()
        if not weights:
            self.skipTest("no LPIPS weights (LACT_LPIPS_CASE: tests/reference/lpips_reference_test.py --make-case)")
        out = os.path.join(self.tmp, "render_lpips")
        rc, so, se = run("render", *self.fixture_flags, "--targets", "3,4", "--lpips", weights, "--out", out,
                         "--quiet")
        self.assertEqual(rc, 0, se)
        with open(os.path.join(out, "report.json")) as f:
            expected = self.report_view(json.load(f), 3)
        shot = os.path.join(self.tmp, "lpips", "shot.png")
        stats = self.view(*self.fixture_flags, "--targets", "3,4", "--camera", 3, "--lpips", weights, "--frames", 10,
                          "--screenshot", shot, "--exit", "--print-stats")
        self.assertEqual(stats["viewer.view"], 3)
        self.assertAlmostEqual(stats["viewer.lpips"], expected["lpips"], delta=1e-4)
        self.assertAlmostEqual(stats["viewer.lpips_nearest_input"], expected["lpips_nearest_input"], delta=1e-4)
        with open(shot[:-len(".png")] + ".json") as f:
            self.assertAlmostEqual(json.load(f)["lpips"], expected["lpips"], delta=1e-4)
        stats = self.view(*self.fixture_flags, "--targets", "3,4", "--camera", 3, "--no-lpips", "--frames", 5,
                          "--exit", "--print-stats")
        self.assertIn("viewer.psnr", stats)
        self.assertNotIn("viewer.lpips", stats)

    def test_camera_frustums(self):
        # On the desk capture, from view 245 (neither input nor test), the input cameras 285, 325, 365 and the test
        # cameras 405, 445 further along the path as pyramids: every line drawn is where projecting those
        # cameras (opencv_cameras.json) through the screenshot's camera puts it, and every predicted line is drawn.
        desk = os.path.join(os.path.abspath(ARGS.data), "mydesk")
        flags = ["--model", self.model, "--data", desk, "--inputs", "285,325,365", "--targets", "405,445", "--size",
                 "72x128", "--threads", "2", "--camera", 245, "--frames", 3, "--exit"]
        on, off = os.path.join(self.tmp, "frustums", "on.png"), os.path.join(self.tmp, "frustums", "off.png")
        self.view(*flags, "--frustums", "--screenshot", on)
        self.view(*flags, "--screenshot", off)
        with open(os.path.splitext(on)[0] + ".json") as f:
            info = json.load(f)
        with open(os.path.join(desk, "opencv_cameras.json")) as f:
            frames = json.load(f)["frames"]
        viewer, region = info["camera"], info["view_region"]
        zoom, x0, y0 = region["zoom"], region["x"], region["y"]
        np.testing.assert_allclose(np.array(viewer["c2w"]), np.linalg.inv(frames[245]["w2c"]), atol=1e-6)
        scale = viewer["w"] / frames[0]["w"]  # 128 / 480 = 72 / 270: the scene's cameras at the working size
        cams = [dict(w=f["w"] * scale, h=f["h"] * scale, fx=f["fx"] * scale, fy=f["fy"] * scale, cx=f["cx"] * scale,
                     cy=f["cy"] * scale, c2w=np.linalg.inv(np.array(f["w2c"])))
                for f in (frames[i] for i in (285, 325, 365, 405, 445))]
        segments = [g for cam in cams for g in frustum_segments(cam, info["frustum_depth"], viewer)]
        diff = np.abs(read_png(on).astype(int) - read_png(off).astype(int))[..., :3].max(axis=2)
        w, h = int(viewer["w"] * zoom), int(viewer["h"] * zoom)
        changed = np.argwhere(diff[y0:y0 + h, x0:x0 + w] > 40)  # (row, col) inside the view
        self.assertGreater(len(changed), 50, "no frustum lines drawn")

        def distance(px, py):  # framebuffer pixel centre -> nearest predicted line (framebuffer pixels)
            best = 1e9
            for a0, b0, a1, b1 in segments:
                p0, p1, q = np.array([a0, b0]) * zoom, np.array([a1, b1]) * zoom, np.array([px + 0.5, py + 0.5])
                t = np.clip(np.dot(q - p0, p1 - p0) / max(np.dot(p1 - p0, p1 - p0), 1e-12), 0, 1)
                best = min(best, np.linalg.norm(p0 + t * (p1 - p0) - q))
            return best

        far = [(r, c) for r, c in changed if distance(c, r) > 1.5]
        self.assertLessEqual(len(far), 0.01 * len(changed), "lines drawn away from the predicted ones: %s" % far[:5])
        # Every predicted line inside the view is drawn: sample points along it find a changed pixel within 1.
        samples = hits = 0
        for a0, b0, a1, b1 in segments:
            for t in np.linspace(0.05, 0.95, 20):
                px, py = (a0 + t * (a1 - a0)) * zoom, (b0 + t * (b1 - b0)) * zoom
                if not (2 <= px < w - 2 and 2 <= py < h - 2):
                    continue
                samples += 1
                r, c = int(py), int(px)
                hits += diff[y0 + r - 1:y0 + r + 2, x0 + c - 1:x0 + c + 2].max() > 40
        self.assertGreater(samples, 20)
        print("\nfrustums: %d changed pixels, %d of them over 1.5 px from a predicted line; %d of %d points along "
              "the predicted lines drawn" % (len(changed), len(far), hits, samples), file=sys.stderr)
        self.assertGreaterEqual(hits, 0.95 * samples)

    def test_orbit_reports_frame_rates(self):
        stats = self.view(*self.fixture_flags, "--orbit-frames", 200, "--exit", "--print-stats")
        self.assertEqual(stats["orbit.frames"], 200)
        self.assertGreater(stats["orbit.novel_views"], 0)
        self.assertLessEqual(stats["orbit.novel_views"], 201)
        self.assertGreater(stats["orbit.novel_views_per_s"], 0)
        self.assertGreater(stats["orbit.ui_fps"], 0)
        self.assertGreater(stats["orbit.render_ms"], 0)

    def test_adaptive_resolution(self):
        # Lower resolution while the orbit moves, the full working size once it stops (and in the screenshot).
        shot = os.path.join(self.tmp, "adaptive", "out.png")
        stats = self.view(*self.fixture_flags, "--adaptive", "--moving-scale", 0.5, "--orbit-frames", 40,
                          "--screenshot", shot, "--exit", "--print-stats")
        self.assertEqual(stats["orbit.smallest_render"], "16x24")
        self.assertEqual(stats["viewer.render_size"], "32x48")
        with open(shot[:-4] + ".json") as f:
            camera = json.load(f)["camera"]
        self.assertEqual((camera["h"], camera["w"]), (32, 48))
        self.assertEqual(read_png(shot[:-4] + ".view.png").shape, (32, 48, 3))

    def test_state_reopens(self):
        state = os.path.join(self.tmp, "scene.safetensors")
        rc, so, se = run("encode", *self.fixture_flags, "-o", state)
        self.assertEqual(rc, 0, se)
        shot = os.path.join(self.tmp, "state", "out.png")
        stats = self.view("--state", state, "--targets", "3,4", "--camera", 3, "--frames", 3, "--screenshot", shot,
                          "--exit", "--print-stats", "--threads", 2)
        self.assertAlmostEqual(stats["viewer.psnr"], self.report_view(self.report, 3)["psnr"], delta=1e-3)
        self.check_screenshot(shot, os.path.join(self.rendered, "scene", "3.png"), 32, 48)

        # A state whose tensors are cut off: the header (read before the window) is fine, loading fails after
        # the window opened; a scripted run ends with the one-line error and exit code 1.
        broken = os.path.join(self.tmp, "broken.safetensors")
        with open(state, "rb") as f:
            data = f.read()
        header = struct.unpack("<Q", data[:8])[0]
        with open(broken, "wb") as f:
            f.write(data[:8 + header + 16])
        rc, so, se = run("view", "--state", broken, "--camera", 3, "--frames", 3, "--exit")
        self.assertEqual(rc, 1, so + se)
        lines = se.strip().splitlines()
        self.assertEqual(len(lines), 1, se)
        self.assertTrue(lines[0].startswith("lact: ") and "broken.safetensors" in lines[0], se)

    def test_gso_toy_64(self):
        flags = ["--model", self.model, "--data", self.gso, "--inputs", "uniform:8", "--size", "64x64", "--threads", "2"]
        out = os.path.join(self.tmp, "gso_render")
        rc, so, se = run("render", *flags, "--targets", "5", "--out", out, "--quiet")
        self.assertEqual(rc, 0, se)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        shot = os.path.join(self.tmp, "gso", "out.png")
        stats = self.view(*flags, "--camera", 5, "--frames", 5, "--screenshot", shot, "--exit", "--print-stats")
        self.assertEqual(stats["viewer.view_role"], "test")
        self.assertAlmostEqual(stats["viewer.psnr"], self.report_view(report, 5)["psnr"], delta=1e-3)
        scene = report["scenes"][0]["name"]
        self.check_screenshot(shot, os.path.join(out, scene, "5.png"), 64, 64)

    def test_missing_ground_truth(self):
        # The scene reads (cameras only) but view 4's image is gone: its render still shows, the missing ground
        # truth is an error (a popup interactively; a scripted run ends with the one-line error, exit code 1).
        scene = os.path.join(self.tmp, "missing_gt")
        shutil.copytree(self.fx, scene, ignore=shutil.ignore_patterns("*.pt", "expected.safetensors"))
        os.remove(os.path.join(scene, "scene", "images", "004.png"))
        flags = ["--model", self.model, "--data", os.path.join(scene, "index.json"), "--inputs", "0,1,2",
                 "--threads", "2"]
        rc, so, se = run("view", *flags, "--camera", 4, "--frames", 3, "--exit")
        self.assertEqual(rc, 1, so + se)
        lines = se.strip().splitlines()
        self.assertEqual(len(lines), 1, se)
        self.assertTrue(lines[0].startswith("lact: ") and "004.png" in lines[0], se)
        self.view(*flags, "--camera", 3, "--frames", 3, "--exit")

    def test_errors_before_the_window(self):
        cases = [
            ("view", "--model", os.path.join(self.tmp, "missing.safetensors"), "--data", self.index, "--inputs", "0,1,2"),
            ("view", *self.fixture_flags, "--camera", 99, "--exit"),
            ("view", "--model", self.model, "--data", self.index),
            ("view", *self.fixture_flags, "--size", "30x30"),
            ("view", *self.fixture_flags, "--window", "big"),
        ]
        for argv in cases:
            rc, so, se = run(*argv)
            self.assertEqual(rc, 1, "%s: %s%s" % (argv, so, se))
            lines = se.strip().splitlines()
            self.assertEqual(len(lines), 1, "%s: %s" % (argv, se))
            self.assertTrue(lines[0].startswith("lact: "), se)

    def test_screenshot_never_replaces_an_input_or_an_existing_file(self):
        # --screenshot names three files (PATH.png, .view.png, .json) and is checked as every named output, before
        # the window: an input (an image of the scene, its camera file) is refused even with --force, an existing
        # file needs --force. Before, `--screenshot DATA/000.png` wrote the window over the input image 000.png.
        scene = os.path.join(self.tmp, "shot_inputs")
        shutil.copytree(self.fx, scene, ignore=shutil.ignore_patterns("*.pt", "expected.safetensors"))
        flags = ["--model", self.model, "--data", os.path.join(scene, "index.json"), "--inputs", "0,1,2",
                 "--threads", "2", "--frames", 2, "--exit"]
        image, cameras = os.path.join(scene, "scene", "images", "000.png"), os.path.join(scene, "scene",
                                                                                          "opencv_cameras.json")
        before = {f: open(f, "rb").read() for f in (image, cameras)}
        for shot, force in ((image, []), (image, ["--force"]), (cameras[:-5], ["--force"])):
            rc, so, se = run("view", *flags, "--screenshot", shot, *force)
            lines = se.strip().splitlines()
            self.assertEqual((rc, len(lines)), (1, 1), so + se)
            self.assertIn("--screenshot", lines[0])
            self.assertIn("is one of this run's inputs", lines[0])
        self.assertEqual({f: open(f, "rb").read() for f in before}, before)
        mine = os.path.join(self.tmp, "shot_mine", "mine.png")
        os.makedirs(os.path.dirname(mine))
        with open(mine[:-4] + ".json", "w") as f:
            f.write("precious")
        rc, so, se = run("view", *flags, "--screenshot", mine)
        self.assertEqual((rc, se.strip()), (1, "lact: --screenshot: '%s' exists (pass --force to replace it)"
                                            % (mine[:-4] + ".json")), so + se)
        with open(mine[:-4] + ".json") as f:
            self.assertEqual(f.read(), "precious")
        self.assertFalse(os.path.exists(mine))
        self.view(*flags, "--screenshot", mine, "--force")
        with open(mine[:-4] + ".json") as f:
            self.assertIn("view_region", json.load(f))

    def test_screenshot_naming_a_folder_is_refused(self):
        # Before, `--screenshot shots/` wrote the hidden files shots/.png, shots/.view.png and shots/.json.
        folder = os.path.join(self.tmp, "shots_folder")
        os.makedirs(folder)
        for shot in (folder + "/", os.path.join(self.tmp, "shots_new") + "/"):
            rc, so, se = run("view", *self.fixture_flags, "--frames", 2, "--exit", "--force", "--screenshot", shot)
            self.assertEqual((rc, se.strip()), (1, "lact: --screenshot: '%s' names a folder, not a screenshot file "
                                                   "(add a file name, such as shot.png)" % shot), so + se)
        self.assertEqual(os.listdir(folder), [])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "shots_new")))

    @unittest.skipUnless(os.environ.get("LACT_VIEWER_BENCH"), "set LACT_VIEWER_BENCH=1 to measure")
    def test_bench(self):
        for name, flags in [
            ("fixture 32x48", self.fixture_flags),
            ("gso_toy 64x64", ["--model", self.model, "--data", self.gso, "--inputs", "uniform:8", "--size", "64x64",
                               "--threads", "2"]),
        ]:
            stats = self.view(*flags, "--orbit-frames", 200, "--exit", "--print-stats", "--no-vsync")
            print("\n%s: %s" % (name, {k: v for k, v in stats.items() if k.startswith("orbit.")}), file=sys.stderr)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--lact", required=True)
    parser.add_argument("--fixture", required=True)
    parser.add_argument("--data", required=True)
    ARGS, rest = parser.parse_known_args()
    use_fixture(ARGS.fixture)
    ARGS.lact = os.path.abspath(ARGS.lact)
    if not os.environ.get("DISPLAY"):
        print("viewer_test: no DISPLAY (run under xvfb-run)", file=sys.stderr)
        return 1
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    sys.exit(main())
