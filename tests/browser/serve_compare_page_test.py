#!/usr/bin/env python3
"""`lact serve --compare-model`'s page in headless Chromium (issue 54 item 3): two models side by side with one
camera. The served state is the shipped model's; side b is that model with every weight times 0.9. On test view 2
a screenshot of each half shows the pixels `lact render --path` gives for its model (sampled at the centre of each
zoomed pixel), each half is labelled with its model and state, and side b's label reads the PSNR `lact render`
reports for that model. At 420 px wide both halves are still on screen, and the "side b" button hides side b.
Exits 77 (ctest: skipped) when no Chromium is installed.

  PYTHONPATH=tests/common:. python3 tests/browser/serve_compare_page_test.py --lact build/app/lact --root .
"""
import json
import os
import signal
import subprocess
import sys
import time

from cli_common import scaled_model  # noqa: E402
from serve_common import Server, camera_path, rgb, shipped, write_json  # noqa: E402
from serve_page_test import DevTools, browser_main, canvas_pixels, launch_chromium, stop_chromium  # noqa: E402

TOLERANCE = 2  # levels: the screenshot of a canvas painted from the PNG (no colour management in headless)




def lact(binary, *argv):
    subprocess.run([binary] + [str(a) for a in argv], check=True, capture_output=True)


def largest_difference(a, b):
    assert a[:2] == b[:2], (a[:2], b[:2])
    return max(abs(p - q) for p, q in zip(a[2], b[2]))


def check_halves(page, expected_a, expected_b, where):
    """Both halves on screen show their model's pixels, and not the other's."""
    shown_a, shown_b = canvas_pixels(page, "view"), canvas_pixels(page, "b_view")
    da, db = largest_difference(shown_a, expected_a), largest_difference(shown_b, expected_b)
    assert da <= TOLERANCE and db <= TOLERANCE, "%s: side a off by %d, side b by %d levels" % (where, da, db)
    assert largest_difference(shown_a, expected_b) > 10 * TOLERANCE, where  # the halves are told apart
    return da, db


def check_narrow(page, expected_a, expected_b):
    page.call("Emulation.setDeviceMetricsOverride", {"width": 420, "height": 800, "deviceScaleFactor": 1,
                                                     "mobile": False})
    try:
        time.sleep(0.5)
        page.evaluate("fitCanvases(); paintView();")
        boxes = page.evaluate(
            "(() => { const r = (id) => { const b = document.getElementById(id).getBoundingClientRect();"
            " return [b.left, b.top, b.right, b.bottom]; }; return { scroll: document.documentElement.scrollWidth,"
            " a: r('view'), b: r('b_view'), a_label: r('a_stats'), b_label: r('b_stats') }; })()")
        assert boxes["scroll"] <= 420, boxes
        for name in ("a", "b", "a_label", "b_label"):
            assert boxes[name][0] >= 0 and boxes[name][2] <= 420, (name, boxes)
        assert boxes["a"][2] - boxes["a"][0] >= 64 and boxes["b"][2] - boxes["b"][0] >= 64, boxes
        assert abs(boxes["a"][1] - boxes["b"][1]) <= 1 and boxes["a"][2] <= boxes["b"][0], boxes  # side by side
        page.evaluate("document.getElementById('view').scrollIntoView()")  # screenshots are of the viewport
        time.sleep(0.3)
        return check_halves(page, expected_a, expected_b, "420 px"), boxes
    finally:
        page.call("Emulation.clearDeviceMetricsOverride")
        time.sleep(0.3)


def run_page(args, browser, tmp):
    model, data, inputs = shipped(os.path.abspath(args.root))
    other, state = os.path.join(tmp, "other.safetensors"), os.path.join(tmp, "state.safetensors")
    scaled_model(model, other, 0.9)
    lact(args.lact, "encode", "--model", model, "--data", data, "--inputs", inputs, "-o", state)
    lact(args.lact, "render", "--model", other, "--data", data, "--inputs", inputs, "--targets", 2, "--out",
         os.path.join(tmp, "report"))
    with open(os.path.join(tmp, "report", "report.json")) as f:
        psnr_b = [v for v in json.load(f)["scenes"][0]["views"] if v["index"] == 2][0]["psnr"]
    server = Server(os.path.abspath(args.lact), "--state", state, "--compare-model", other, "--targets", "2",
                    "--max-side", "128", "--out", os.path.join(tmp, "out"))
    chrome = None
    try:
        scene = server.ready()
        camera = scene["views"][2]["camera"]
        path = write_json(os.path.join(tmp, "view2.json"), camera_path([camera]))
        lact(args.lact, "render", "--state", state, "--path", path, "--out", os.path.join(tmp, "a"))
        lact(args.lact, "render", "--model", other, "--data", data, "--inputs", inputs, "--path", path, "--out",
             os.path.join(tmp, "b"))
        expected = [rgb(open(os.path.join(tmp, side, "frame_0000.png"), "rb").read()) for side in ("a", "b")]
        chrome, url = launch_chromium(browser, os.path.join(tmp, "profile"))
        page = DevTools(url)
        page.call("Page.enable")
        page.call("Page.navigate", {"url": server.url})
        page.wait_for("document.getElementById('stage').textContent.startsWith('ready')")
        page.evaluate("document.querySelector('[data-view=\"2\"]').click()")
        time.sleep(0.5)
        page.wait_for("document.getElementById('format').textContent === 'png' && "
                      "document.getElementById('role').textContent.startsWith('2 ') && "
                      "!document.getElementById('b_tile').hidden && "
                      "document.getElementById('b_stats').textContent.includes('PSNR')")
        time.sleep(0.4)
        names = [page.text("a_name"), page.text("b_name")]
        assert names == ["a: lact_tiny_obj64.safetensors / state.safetensors", "b: other.safetensors"], names
        label = page.text("b_stats")
        assert "PSNR %.2f" % psnr_b in label, (label, psnr_b)
        assert "PSNR" in page.text("a_stats") and page.text("a_stats") != label, page.text("a_stats")
        wide = check_halves(page, expected[0], expected[1], "1200 px")
        print("ok: 1200 px: side a (%s) and side b (%s) equal lact render of their models within %d and %d levels" %
              (names[0], names[1], wide[0], wide[1]))
        print("ok: side b's label '%s' (lact render: PSNR %.4f)" % (label, psnr_b))
        narrow, boxes = check_narrow(page, expected[0], expected[1])
        print("ok: 420 px: both halves on screen (a %s, b %s), their pixels within %d and %d levels" %
              ([round(v) for v in boxes["a"]], [round(v) for v in boxes["b"]], narrow[0], narrow[1]))
        page.evaluate("document.getElementById('side_b').click()")
        assert page.evaluate("document.getElementById('b_tile').hidden"), "the side b button did not hide it"
        page.evaluate("document.getElementById('side_b').click()")
        assert not page.evaluate("document.getElementById('b_tile').hidden")
        print("ok: the side b button hides and shows side b")
    finally:
        stop_chromium(chrome)
        rc, _, se = server.stop(signal.SIGTERM)
        assert rc == 0 and "terminate called" not in se, se[-3000:]


def main():
    return browser_main(__doc__.splitlines()[0], run_page, "lact_serve_compare_browser_")


if __name__ == "__main__":
    sys.exit(main())
