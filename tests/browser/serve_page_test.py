#!/usr/bin/env python3
"""`lact serve`'s page in a real browser: headless Chromium driven through the DevTools protocol (our own client,
tests/common/ws_client.py, on the standard library). Opens the page with its token, waits for the first frame, drags the
mouse across the view and checks that the canvas shows a new frame (screenshots of the canvas before and after
differ), then snaps to a test view and checks that the stats show the PSNR `lact render` reports for it.
Exits 77 (ctest: skipped) when no Chromium is installed.

  PYTHONPATH=tests/common:. python3 tests/browser/serve_page_test.py --lact build/app/lact --root .
"""
import argparse
import base64
import itertools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from serve_common import Server, rgb, shipped  # noqa: E402
from ws_client import WebSocket  # noqa: E402

SKIPPED = 77


class DevTools:
    """One page of a headless Chromium, over the browser's DevTools WebSocket (flattened target sessions)."""

    def __init__(self, browser_url):
        self.ws = WebSocket(browser_url, timeout=60)
        self.ids = itertools.count(1)
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method, params=None):
        message_id = next(self.ids)
        message = {"id": message_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        self.ws.send_json(message)
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        return result["result"].get("value")

    def wait_for(self, expression, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError("timed out waiting for %s" % expression)

    def canvas_screenshot(self):
        box = self.evaluate("(() => { const r = document.getElementById('view').getBoundingClientRect();"
                            " return [r.x, r.y, r.width, r.height]; })()")
        shot = self.call("Page.captureScreenshot", {"format": "png", "clip": {"x": box[0], "y": box[1], "width": box[2],
                                                                             "height": box[3], "scale": 1}})
        return rgb(base64.b64decode(shot["data"]))

    def drag(self, dx, dy, steps=10):
        x, y = self.evaluate("(() => { const r = document.getElementById('main').getBoundingClientRect();"
                             " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        self.call("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1})
        for i in range(1, steps + 1):
            self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x + dx * i / steps,
                                                   "y": y + dy * i / steps, "button": "left", "buttons": 1})
            time.sleep(0.05)
        self.call("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x + dx, "y": y + dy, "button": "left",
                                               "clickCount": 1})


    def pixels(self, canvas_id):
        """(width, height, RGB bytes) of a canvas as the page painted it (getImageData)."""
        w, h, data = self.evaluate(
            "(() => { const c = document.getElementById('%s'); const d = c.getContext('2d').getImageData(0, 0, c.width,"
            " c.height).data; return [c.width, c.height, Array.from(d)]; })()" % canvas_id)
        return w, h, bytes(v for i, v in enumerate(data) if i % 4 != 3)

    def set_input(self, element_id, value, event="input"):
        self.evaluate("(() => { const e = document.getElementById('%s'); e.value = '%s';"
                      " e.dispatchEvent(new Event('%s')); })()" % (element_id, value, event))

    def text(self, element_id):
        return self.evaluate("document.getElementById('%s').textContent" % element_id)

    def at_rest(self, role_prefix=None):
        """Waits for the PNG frame of the camera at rest (and, given, a role text starting with role_prefix)."""
        time.sleep(0.5)
        condition = "document.getElementById('format').textContent === 'png'"
        if role_prefix is not None:
            condition += " && document.getElementById('role').textContent.startsWith('%s')" % role_prefix
        self.wait_for(condition)
        time.sleep(0.4)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def browser_main(description, run_page, prefix, ffmpeg=False):
    """A browser test's main: --lact and --root parsed (made absolute), 77 (ctest: skipped) without Chromium (or,
    with `ffmpeg`, without ffmpeg), else run_page(args, browser, tmp) in a temporary folder removed after it: 0."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lact", required=True)
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    args.lact, args.root = os.path.abspath(args.lact), os.path.abspath(args.root)
    browser = chromium()
    if not browser or (ffmpeg and not shutil.which("ffmpeg")):
        print("skipped: no Chromium%s installed (Debian: chromium%s)" % ((" or no ffmpeg", ", ffmpeg") if ffmpeg
                                                                        else ("", "")))
        return SKIPPED
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        run_page(args, browser, tmp)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def canvas_pixels(page, canvas_id):
    """(width, height, RGB bytes) of canvas `canvas_id` as Chromium shows it: scrolled into view, a screenshot of its
    box sampled at the centre of each canvas pixel (the canvas is zoomed by an integer factor, pixelated)."""
    w, h, box = page.evaluate("(() => { const c = document.getElementById('%s'); c.scrollIntoView();"
                              " const r = c.getBoundingClientRect(); return [c.width, c.height,"
                              " [r.x + scrollX, r.y + scrollY, r.width, r.height]]; })()" % canvas_id)
    shot = page.call("Page.captureScreenshot", {"format": "png", "clip": {"x": box[0], "y": box[1], "width": box[2],
                                                                         "height": box[3], "scale": 1}})
    sw, sh, pixels = rgb(base64.b64decode(shot["data"]))
    out = bytearray()
    for y in range(h):
        for x in range(w):
            sx, sy = int((x + 0.5) * sw / w), int((y + 0.5) * sh / h)
            out += pixels[3 * (sy * sw + sx):3 * (sy * sw + sx) + 3]
    return w, h, bytes(out)


def launch_chromium(browser, profile):
    """Headless Chromium at 1200x900 with its own profile folder: (its process, its DevTools URL)."""
    chrome = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--remote-debugging-port=0", "--user-data-dir=" + profile, "--window-size=1200,900",
                               "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in chrome.stderr:
        m = re.search(r"DevTools listening on (ws://\S+)", line)
        if m:
            return chrome, m.group(1)
    chrome.kill()
    raise AssertionError("Chromium printed no DevTools URL")


def stop_chromium(chrome):
    """SIGTERM, then SIGKILL after 10 s; nothing when `chrome` is None."""
    if not chrome:
        return
    chrome.send_signal(signal.SIGTERM)
    try:
        chrome.wait(timeout=10)
    except subprocess.TimeoutExpired:
        chrome.kill()


# The view controls and the comparison (issue 54 items 3 and 4), each against a reference computed here.

def heat(t):
    """error_heat_map's colour (core/metrics.cpp) at t in [0, 1] of the scale: black, red, yellow, white."""
    t = min(max(t, 0.0), 1.0) * 3
    return (min(t, 1.0), min(max(t - 1, 0.0), 1.0), min(max(t - 2, 0.0), 1.0))


def check_hxw(page, scene):
    """A frame wider than high reads HxW, like every lact size (before: WxH)."""
    patch = scene["limits"]["patch"]
    page.evaluate("snap(scene.start_view); cam.w += %d; cam.cx += %d; moved();" % (2 * patch, patch))
    page.at_rest("free")
    h, w = scene["height"], scene["width"] + 2 * patch
    page.wait_for("document.getElementById('size').textContent === '%dx%d'" % (h, w))
    assert page.evaluate("[document.getElementById('view').width, document.getElementById('view').height]") == [w, h]
    page.evaluate("snap(scene.start_view)")
    page.at_rest()
    return "%dx%d" % (h, w)


def check_fov(page, server):
    """The field-of-view slider: fy = (h / 2) / tan(fov / 2) with fx / fy kept, and the page shows what POST
    /api/render gives for that camera."""
    page.evaluate("snap(scene.start_view)")
    page.at_rest()
    start = page.evaluate("toJson()")
    before = page.pixels("view")
    page.set_input("fov", "30")
    camera = page.evaluate("toJson()")
    fy = camera["h"] / 2 / math.tan(math.radians(15))
    assert abs(camera["fy"] - fy) < 1e-9 * fy, (camera["fy"], fy)
    assert abs(camera["fx"] / camera["fy"] - start["fx"] / start["fy"]) < 1e-12
    assert page.text("fov_value") == "30.0", page.text("fov_value")
    page.at_rest("free")
    after = page.pixels("view")
    assert after != before, "the view did not change with the field of view"
    status, _, png = server.render(page.evaluate("shown.camera"))
    assert status == 200, png[:300]
    assert rgb(png) == after, "the page's frame differs from POST /api/render's for its camera"
    page.evaluate("snap(scene.start_view)")
    page.at_rest()
    return "%.2f" % camera["fy"]


def check_resolution(page, scene):
    """The resolution list: sizes (HxW) whose sides are multiples of the patch and at most --max-side; choosing
    twice the working size renders frames of that size."""
    h, w, patch, most = scene["height"], scene["width"], scene["limits"]["patch"], scene["limits"]["max_side"]
    offered = page.evaluate("Array.from(document.getElementById('resolution').options).map((o) => o.textContent)")
    for text in offered:
        rows, cols = (int(v) for v in text.split("x"))
        assert rows % patch == 0 and cols % patch == 0 and max(rows, cols) <= most, (text, patch, most)
        assert rows * w == cols * h, text  # the scene's aspect
    assert "%dx%d" % (h, w) in offered and "%dx%d" % (2 * h, 2 * w) in offered, offered
    assert "%dx%d" % (3 * h, 3 * w) not in offered, offered  # over --max-side
    page.set_input("resolution", "2", "change")
    page.wait_for("document.getElementById('size').textContent === '%dx%d'" % (2 * h, 2 * w))
    page.at_rest()
    assert page.evaluate("document.getElementById('view').width") == 2 * w
    page.set_input("resolution", "1", "change")
    page.wait_for("document.getElementById('size').textContent === '%dx%d'" % (h, w))
    page.at_rest()
    return offered


def check_legend(page):
    """The legend's swatches have the input and test buttons' borders."""
    legend = page.text("legend")
    assert "input view" in legend and "test view" in legend, legend
    border = ("(s) => getComputedStyle(document.querySelector(s)).borderTopColor")
    colours = page.evaluate("(() => { const b = %s; return [b('#legend .swatch.test'), b('#views button.test'),"
                            " b('#legend .swatch:not(.test)'), b('#views button:not(.test)')]; })()" % border)
    assert colours[0] == colours[1] and colours[2] == colours[3] and colours[0] != colours[2], colours


def check_narrow(page):
    """At 420 px wide the panel sits above the view and nothing is wider than the screen (before: the 300 px
    panel beside the view)."""
    page.call("Emulation.setDeviceMetricsOverride", {"width": 420, "height": 800, "deviceScaleFactor": 1,
                                                     "mobile": False})
    try:
        time.sleep(0.5)
        boxes = page.evaluate(
            "(() => { const r = (id) => { const b = document.getElementById(id).getBoundingClientRect();"
            " return [b.left, b.top, b.right, b.bottom]; }; return { scroll: document.documentElement.scrollWidth,"
            " side: r('side'), main: r('main'), view: r('view'), fov: r('fov'), resolution: r('resolution'),"
            " legend: r('legend') }; })()")
        assert boxes["scroll"] <= 420, boxes
        for name in ("view", "fov", "resolution", "legend", "side", "main"):
            assert boxes[name][0] >= 0 and boxes[name][2] <= 420, (name, boxes[name])
        assert boxes["side"][3] <= boxes["main"][1] + 1, boxes  # the panel above the view
        assert boxes["view"][2] - boxes["view"][0] >= 64, boxes
    finally:
        page.call("Emulation.clearDeviceMetricsOverride")
        time.sleep(0.3)


def camera_space(viewer, p):
    m = viewer["c2w"]
    d = [p[i] - m[i][3] for i in range(3)]
    return [sum(m[k][j] * d[k] for k in range(3)) for j in range(3)]


def frustum_lines(f, depth, viewer, near=1e-3):
    """viewer/frustums.cpp's pyramid of camera f seen through viewer: segments in viewer pixels."""
    m = f["c2w"]

    def world(x, y, z):
        return [m[i][0] * x + m[i][1] * y + m[i][2] * z + m[i][3] for i in range(3)]

    corners = [(0, 0), (f["w"], 0), (f["w"], f["h"]), (0, f["h"])]
    points = [world(0, 0, 0)] + [world((u - f["cx"]) / f["fx"] * depth, (v - f["cy"]) / f["fy"] * depth, depth)
                                 for u, v in corners]
    seen = [camera_space(viewer, p) for p in points]
    out = []
    for i, j in ((0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (2, 3), (3, 4), (4, 1)):
        a, b = list(seen[i]), list(seen[j])
        if a[2] < near and b[2] < near:
            continue
        if a[2] < near or b[2] < near:
            behind, front = (a, b) if a[2] < near else (b, a)
            t = (near - front[2]) / (behind[2] - front[2])
            for k in range(3):
                behind[k] = front[k] + t * (behind[k] - front[k])
        project = lambda q: (viewer["fx"] * q[0] / q[2] + viewer["cx"], viewer["fy"] * q[1] / q[2] + viewer["cy"])
        out.append(project(a) + project(b))
    return out


def distance(x, y, s):
    ax, ay, bx, by = s
    dx, dy = bx - ax, by - ay
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - ax - t * dx, y - ay - t * dy)


def check_frustums(page, scene):
    """The input and test cameras' pyramids over the view: every drawn pixel lies on a pyramid's edge as
    projected here, and every edge whose middle is in view is drawn there."""
    framed = [v for v in scene["views"] if v["role"] in ("input", "test")]
    at = framed[0]
    page.evaluate("snap(%d)" % at["index"])
    page.at_rest("%d " % at["index"])
    read = ("(() => { const c = document.getElementById('overlay'); const d = c.getContext('2d').getImageData(0, 0,"
            " c.width, c.height).data; const out = []; for (let i = 3; i < d.length; i += 4) if (d[i] > 0)"
            " out.push([(i >> 2) % c.width, Math.floor((i >> 2) / c.width)]); return [c.width, out]; })()")
    assert not page.evaluate(read)[1], "pyramids drawn before they were asked for"
    page.evaluate("document.getElementById('frustums').click()")
    width, drawn = page.evaluate(read)
    page.evaluate("document.getElementById('frustums').click()")
    viewer = at["camera"]
    per = width / viewer["w"]
    positions = [v["camera"]["c2w"] for v in framed]
    mean = [sum(m[i][3] for m in positions) / len(positions) for i in range(3)]
    depth = 0.1 * max(math.dist([m[i][3] for i in range(3)], mean) for m in positions)
    lines = [tuple(c * per for c in s) for v in framed for s in frustum_lines(v["camera"], depth, viewer)]
    assert len(drawn) > 50, len(drawn)
    off = [p for p in drawn if min(distance(p[0] + 0.5, p[1] + 0.5, s) for s in lines) > 2.0]
    assert len(off) <= len(drawn) // 100, "%d of %d drawn pixels on no edge" % (len(off), len(drawn))
    middles = [((s[0] + s[2]) / 2, (s[1] + s[3]) / 2) for s in lines]
    inside = [m for m in middles if 3 < m[0] < width - 3 and 3 < m[1] < width * viewer["h"] / viewer["w"] - 3]
    for mx, my in inside:
        assert any(math.hypot(x + 0.5 - mx, y + 0.5 - my) <= 2.0 for x, y in drawn), (mx, my)
    return len(drawn), len(inside)


def check_split_and_scale(page, scene, test_view):
    """On a test view, the split slider shows the render left of it and the ground truth right of it (each equal
    to the page's own render and ground-truth tiles), and the error map reads against its colour scale."""
    page.evaluate("document.querySelector('[data-view=\"%d\"]').click()" % test_view)
    page.at_rest("%d " % test_view)
    render = page.pixels("view")
    page.evaluate("document.getElementById('split').click()")
    page.wait_for("shown.truth !== null && document.getElementById('role').textContent.startsWith('%d ')" % test_view)
    shots = {}
    for at in (100, 0, 50):
        page.set_input("split_at", str(at))
        shots[at] = page.pixels("view")
    page.evaluate("document.getElementById('split').click()")
    for what in ("truth", "error"):
        page.evaluate("document.getElementById('%s').click()" % what)
    page.wait_for("!document.getElementById('error_tile').hidden && !document.getElementById('truth_tile').hidden")
    page.at_rest("%d " % test_view)
    truth, error = page.pixels("truth_view"), page.pixels("error_view")
    w, h, _ = render
    assert shots[100] == render and shots[0] == truth and render != truth, "split at the ends"
    cut = round(w * 0.5) * 3
    for y in range(h):
        row = slice(y * w * 3, (y + 1) * w * 3)
        assert shots[50][2][row][:cut] == render[2][row][:cut] and shots[50][2][row][cut:] == truth[2][row][cut:], y
    saturation = scene["error_map"]["saturation"]
    assert page.text("error_max") == "%.3f or more" % saturation, page.text("error_max")
    bar = page.pixels("error_scale")
    for x in (0, 64, 128, 191, 255):
        expected = [round(255 * c) for c in heat(x / 255)]
        assert all(abs(a - b) <= 1 for a, b in zip(bar[2][3 * x:3 * x + 3], expected)), (x, bar[2][3 * x:3 * x + 3])
    # The map's colours, from the render and the ground truth by the scale (8-bit render: within 8 levels).
    worst = 0
    for p in range(w * h):
        e = sum(abs(render[2][3 * p + c] - truth[2][3 * p + c]) for c in range(3)) / 3 / 255
        expected = [255 * c for c in heat(e / saturation)]
        worst = max(worst, max(abs(a - b) for a, b in zip(error[2][3 * p:3 * p + 3], expected)))
    assert worst <= 8, worst
    for what in ("truth", "error"):
        page.evaluate("document.getElementById('%s').click()" % what)
    return worst


def check_controls(page, server, scene):
    print("ok: a wider frame reads %s (HxW)" % check_hxw(page, scene))
    print("ok: field of view 30 degrees: fy %s, the frame equal to POST /api/render's" % check_fov(page, server))
    print("ok: resolutions offered under --max-side 128: %s" % ", ".join(check_resolution(page, scene)))
    check_legend(page)
    check_narrow(page)
    print("ok: the legend matches the buttons; at 420 px the panel is above the view, nothing wider")
    print("ok: camera pyramids: %d pixels drawn, all on projected edges; %d edge middles in view drawn" %
          check_frustums(page, scene))
    print("ok: split 0/50/100 = truth/both/render; error map within %d levels of its colour scale" %
          check_split_and_scale(page, scene, 2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lact", required=True)
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    browser = chromium()
    if not browser:
        print("skipped: no Chromium installed (Debian: chromium)")
        return SKIPPED
    model, data, inputs = shipped(os.path.abspath(args.root))
    tmp = tempfile.mkdtemp(prefix="lact_serve_browser_")
    server = chrome = None
    try:
        report = os.path.join(tmp, "report")
        subprocess.run([args.lact, "render", "--model", model, "--data", data, "--inputs", inputs, "--targets", "2",
                        "--out", report], check=True, capture_output=True)
        with open(os.path.join(report, "report.json")) as f:
            psnr = [v for v in json.load(f)["scenes"][0]["views"] if v["index"] == 2][0]["psnr"]
        server = Server(os.path.abspath(args.lact), "--model", model, "--data", data, "--inputs", inputs, "--targets", "2",
                        "--max-side", "128")
        scene = server.ready()
        chrome, url = launch_chromium(browser, os.path.join(tmp, "profile"))
        page = DevTools(url)
        page.call("Page.enable")
        page.call("Page.navigate", {"url": server.url})
        page.wait_for("document.getElementById('stage').textContent.startsWith('ready') && "
                      "document.getElementById('size').textContent === '64x64' && "
                      "document.getElementById('format').textContent === 'png'")
        before = page.canvas_screenshot()
        page.drag(120, 30)
        time.sleep(0.5)  # the camera rests: the page asks for the PNG of the new view
        page.wait_for("document.getElementById('format').textContent === 'png' && "
                      "document.getElementById('role').textContent === 'free'")
        time.sleep(0.3)
        after = page.canvas_screenshot()
        assert before[:2] == after[:2], (before[:2], after[:2])
        changed = sum(a != b for a, b in zip(before[2], after[2]))
        assert changed > len(before[2]) // 20, "the canvas hardly changed after the drag: %d bytes" % changed
        page.evaluate("document.querySelector('[data-view=\"2\"]').click()")
        shown = page.wait_for("(() => { const t = document.getElementById('psnr').textContent;"
                              " return document.getElementById('role').textContent.startsWith('2 ') && t !== '-' ? t : ''; })()")
        assert abs(float(shown) - psnr) < 0.006, (shown, psnr)
        print("ok: the drag changed %d of %d canvas bytes; test view 2 shows PSNR %s (lact render: %.4f)" %
              (changed, len(before[2]), shown, psnr))
        check_controls(page, server, scene)
        return 0
    finally:
        stop_chromium(chrome)
        if server:
            rc, _, se = server.stop()
            assert rc == 0, se[-2000:]
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
