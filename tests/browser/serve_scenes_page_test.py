#!/usr/bin/env python3
"""`lact serve`'s page with many scenes in headless Chromium (issue 54 items 5 and 6): two scenes of an index
(the shipped example, and it with colours inverted). The page lists both; on test view 2 a screenshot shows the
pixels `lact render --path` gives for the first scene's state; picking the second scene in the list moves the
stream there (its state encoded on the server), and the screenshot then shows the second scene's pixels, not the
first's. Exits 77 (ctest: skipped) when no Chromium is installed.

  PYTHONPATH=tests/common:. python3 tests/browser/serve_scenes_page_test.py --lact build/app/lact --root .
"""
import os
import signal
import subprocess
import sys
import time

from serve_common import Server, camera_path, rgb, scene_index, shipped, write_json  # noqa: E402
from serve_page_test import DevTools, browser_main, canvas_pixels, launch_chromium, stop_chromium  # noqa: E402

TOLERANCE = 2  # levels: the screenshot of a canvas painted from the PNG (no colour management in headless)
NAMES = ("toy_a", "toy_b")


def lact(binary, *argv):
    subprocess.run([binary] + [str(a) for a in argv], check=True, capture_output=True)


def largest_difference(a, b):
    assert a[:2] == b[:2], (a[:2], b[:2])
    return max(abs(p - q) for p, q in zip(a[2], b[2]))


def expected_views(args, tmp, index, camera):
    """Each scene's test view 2 as `lact render --path` of a state `lact encode` made of that scene."""
    model, _, inputs = shipped(os.path.abspath(args.root))
    path = write_json(os.path.join(tmp, "view2.json"), camera_path([camera]))
    out = []
    for name in NAMES:
        state = os.path.join(tmp, name + ".safetensors")
        lact(args.lact, "encode", "--model", model, "--data", index, "--scene", name, "--inputs", inputs, "-o", state)
        lact(args.lact, "render", "--state", state, "--path", path, "--out", os.path.join(tmp, name))
        out.append(rgb(open(os.path.join(tmp, name, "frame_0000.png"), "rb").read()))
    return out


def shows(page, expected, other, where):
    """The view's screenshot is `expected` within the tolerance and not `other`."""
    shown = canvas_pixels(page, "view")
    off = largest_difference(shown, expected)
    assert off <= TOLERANCE, "%s: off by %d levels" % (where, off)
    assert largest_difference(shown, other) > 10 * TOLERANCE, where
    return off


def wait_for_view_2(page, scene_name):
    page.wait_for("document.getElementById('title').textContent === 'lact serve: %s' && "
                  "document.getElementById('stage').textContent.startsWith('ready') && "
                  "document.getElementById('format').textContent === 'png' && "
                  "document.getElementById('role').textContent.startsWith('2 ')" % scene_name)
    time.sleep(0.4)


def run_page(args, browser, tmp):
    model, _, inputs = shipped(os.path.abspath(args.root))
    index = scene_index(os.path.abspath(args.root), os.path.join(tmp, "data"), NAMES)
    server = Server(os.path.abspath(args.lact), "--model", model, "--data", index, "--inputs", inputs, "--targets",
                    "2", "--out", os.path.join(tmp, "out"))
    chrome = None
    try:
        expected = expected_views(args, tmp, index, server.ready()["views"][2]["camera"])
        chrome, url = launch_chromium(browser, os.path.join(tmp, "profile"))
        page = DevTools(url)
        page.call("Page.enable")
        page.call("Page.navigate", {"url": server.url})
        wait_for_view_2(page, "toy_a")
        options = page.evaluate("[...document.getElementById('scenes').options].map((o) => o.textContent)")
        assert options == ["toy_a (64 views, 64x64)", "toy_b (64 views, 64x64)"], options
        assert not page.evaluate("document.getElementById('scenes_row').hidden")
        off_a = shows(page, expected[0], expected[1], "scene toy_a")
        print("ok: the scene list %s; toy_a's test view 2 = lact render of its state within %d levels" %
              (options, off_a))
        started = time.time()
        page.evaluate("(() => { const s = document.getElementById('scenes'); s.value = '1'; s.onchange(); })()")
        wait_for_view_2(page, "toy_b")
        seconds = time.time() - started
        off_b = shows(page, expected[1], expected[0], "scene toy_b")
        assert page.evaluate("document.getElementById('scenes').value") == "1"
        print("ok: toy_b picked in the list: its state encoded on the server and its view 2 shown in %.1f s, "
              "= lact render of its state within %d levels (and not toy_a's)" % (seconds, off_b))
    finally:
        stop_chromium(chrome)
        rc, _, se = server.stop(signal.SIGTERM)
        assert rc == 0 and "terminate called" not in se, se[-3000:]


def main():
    return browser_main(__doc__.splitlines()[0], run_page, "lact_serve_scenes_browser_")


if __name__ == "__main__":
    sys.exit(main())
