#!/usr/bin/env python3
"""`lact serve`'s page in a real browser: headless Chromium driven through the DevTools protocol (our own client,
tests/ws_client.py, on the standard library). Opens the page with its token, waits for the first frame, drags the
mouse across the view and checks that the canvas shows a new frame (screenshots of the canvas before and after
differ), then snaps to a test view and checks that the stats show the PSNR `lact render` reports for it.
Exits 77 (ctest: skipped) when no Chromium is installed.

  python3 tests/serve_browser_test.py --lact build/app/lact --root .
"""
import argparse
import base64
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


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
        server = Server(os.path.abspath(args.lact), "--model", model, "--data", data, "--inputs", inputs, "--targets", "2")
        server.ready()
        chrome = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--remote-debugging-port=0", "--user-data-dir=" + os.path.join(tmp, "profile"),
                                   "--window-size=1200,900", "about:blank"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        url = None
        for line in chrome.stderr:
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "Chromium printed no DevTools URL"
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
        return 0
    finally:
        if chrome:
            chrome.send_signal(signal.SIGTERM)
            try:
                chrome.wait(timeout=10)
            except subprocess.TimeoutExpired:
                chrome.kill()
        if server:
            rc, _, se = server.stop()
            assert rc == 0, se[-2000:]
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
