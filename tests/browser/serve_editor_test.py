#!/usr/bin/env python3
"""The keyframe path editor of `lact serve`'s page in headless Chromium (issue 54 items 1 and 6): keyframes added
by mouse clicks at three cameras, one keyframe's field of view set, moved down and up, one deleted; the timeline
scrubbed (the canvas, read back and in a screenshot, equals POST /api/render of the server's interpolated
camera); "Render video" rendered on the server and its MP4 downloaded through the page's link (its frames against
`lact render --path` of the path downloaded from the page); the path saved on the server, loaded back and
uploaded. Exits 77 (ctest: skipped) without Chromium or ffmpeg.

  python3 tests/browser/serve_editor_test.py --lact build/app/lact --root .
"""
import json
import math
import os
import subprocess
import sys
import time

from serve_common import Server, decoded_frames, psnr, rgb, shipped  # noqa: E402
from serve_page_test import DevTools, browser_main, canvas_pixels, launch_chromium, stop_chromium  # noqa: E402

FRAMES, FPS = 12, 12  # a 1 s path


def click(page, element_id):
    """A real left click (mouse pressed and released) in the middle of the element, scrolled into view."""
    x, y = page.evaluate("(() => { const e = document.getElementById('%s'); e.scrollIntoView({block: 'center'});"
                         " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
                         % element_id)
    for kind in ("mousePressed", "mouseReleased"):
        page.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})


def keys(page):
    return page.evaluate("editor.keys")


def same_cameras(a, b):
    """Equal cameras, intrinsics to float precision (a saved path holds them as lact's Camera does: float)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x["w"], x["h"], x["c2w"]) != (y["w"], y["h"], y["c2w"]):
            return False
        if any(abs(x[k] - y[k]) > 1e-6 * abs(y[k]) for k in ("fx", "fy", "cx", "cy")):
            return False
    return True


def wait_file(path, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and not os.path.exists(path + ".crdownload") and os.path.getsize(path) > 0:
            time.sleep(0.3)
            return path
        time.sleep(0.2)
    raise AssertionError("no download %s in %d s (the folder holds %s)" % (path, timeout,
                                                                      os.listdir(os.path.dirname(path))))


def add_keyframes(page):
    """Three keyframes by clicks: the start view, then after two drags; a fourth added and deleted; the second's
    field of view set to 40 degrees; the first moved down and back up."""
    click(page, "key_add")
    for dx, dy in ((140, 20), (120, -30)):
        page.drag(dx, dy)
        page.at_rest("free")
        click(page, "key_add")
    shown = page.evaluate("shown.camera")
    assert page.text("key_count") == "3 keyframes", page.text("key_count")
    assert keys(page)[2] == shown, "the keyframe is not the camera shown"
    click(page, "key_add")
    click(page, "key_delete_3")
    assert len(keys(page)) == 3
    before = keys(page)
    page.set_input("key_fov_1", "40", "change")
    k = keys(page)[1]
    assert abs(k["fy"] - k["h"] / 2 / math.tan(math.radians(20))) < 1e-9 * k["fy"], k
    assert abs(k["fx"] / k["fy"] - before[1]["fx"] / before[1]["fy"]) < 1e-12
    after_fov = keys(page)
    click(page, "key_down_0")
    assert keys(page) == [after_fov[1], after_fov[0], after_fov[2]], "move down"
    click(page, "key_up_1")
    assert keys(page) == after_fov, "move up"
    return after_fov


def scrub(page, server, frame):
    """The timeline at `frame`: the canvas (read back, and on screen) equals POST /api/render of the server's
    interpolation of the page's keyframes at that frame."""
    status, _, body = server.request("POST", "/api/path/interpolate", body=json.dumps({
        "keyframes": keys(page), "frames": FRAMES, "smoothness": 0.5}).encode())
    assert status == 200, body
    expected_camera = json.loads(body)["frames"][frame]
    page.set_input("timeline", str(frame))
    page.wait_for("shown.camera !== null && JSON.stringify(shown.camera) === JSON.stringify(pinned)")
    page.at_rest("free")
    assert page.evaluate("shown.camera") == expected_camera, "the previewed camera is not the server's"
    status, _, png = server.render(expected_camera)
    assert status == 200, png[:300]
    expected = rgb(png)
    painted = page.pixels("view")
    assert painted == expected, "the canvas differs from POST /api/render of the interpolated camera"
    on_screen = canvas_pixels(page, "view")
    worst = max(abs(a - b) for a, b in zip(on_screen[2], expected[2]))
    assert on_screen[:2] == expected[:2] and worst <= 2, (on_screen[:2], worst)
    return expected, worst


def render_video(page, downloads):
    click(page, "path_render")
    page.wait_for("!document.getElementById('path_mp4').hidden", timeout=300)
    info = page.text("path_video")
    assert info.startswith("done in "), info
    click(page, "path_mp4")
    return wait_file(os.path.join(downloads, "lact_keyframes.mp4")), info


def check_video(args, state, page, downloads, tmp, scene):
    """The MP4 downloaded through the page against `lact render --path` of the path downloaded from the page."""
    mp4, info = render_video(page, downloads)
    page.set_input("path_name", "editor_path")
    click(page, "path_download")
    path = wait_file(os.path.join(downloads, "editor_path.json"))
    with open(path) as f:
        downloaded = json.load(f)
    assert len(downloaded["frames"]) == FRAMES and downloaded["keyframes"] == keys(page), "the downloaded path"
    assert downloaded["frames"] == page.evaluate("editor.frames")
    out = os.path.join(tmp, "rendered")
    p = subprocess.run([args.lact, "render", "--state", state, "--path", path, "--out", out], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    frames = decoded_frames(mp4, scene["width"], scene["height"])
    assert len(frames) == FRAMES, len(frames)
    values = []
    for index in (0, FRAMES - 1):
        with open(os.path.join(out, "frame_%04d.png" % index), "rb") as f:
            values.append(psnr(frames[index], rgb(f.read())[2]))
    assert min(values) > 30, values
    with open(os.path.join(out, "frame_%04d.png" % (FRAMES - 1)), "rb") as f:
        assert psnr(frames[0], rgb(f.read())[2]) < 30, "the first and last frames are alike: the check is weak"
    return info, values


def check_save_load_upload(page, out, downloads):
    saved = keys(page)
    page.set_input("path_name", "my-path")
    click(page, "path_save")
    page.wait_for("document.getElementById('path_message').textContent.startsWith('saved')")
    message = page.text("path_message")
    assert message == "saved my-path.json (%d frames)" % FRAMES, message
    assert os.path.isfile(os.path.join(out, "paths", "my-path.json"))
    click(page, "path_save")  # again: refused, the file kept
    page.wait_for("document.getElementById('path_message').textContent.includes('exists')")
    for i in range(3):
        click(page, "key_delete_0")
    assert keys(page) == [] and page.text("key_count") == "no keyframes"
    page.wait_for("Array.from(document.getElementById('path_saved').options).some((o) => o.value === 'my-path')")
    page.set_input("path_saved", "my-path", "change")
    click(page, "path_load")
    page.wait_for("editor.keys.length === 3")
    assert same_cameras(keys(page), saved), "loaded keyframes differ"
    for i in range(3):
        click(page, "key_delete_0")
    document = page.call("DOM.getDocument")["root"]["nodeId"]
    node = page.call("DOM.querySelector", {"nodeId": document, "selector": "#path_upload"})["nodeId"]
    page.call("DOM.setFileInputFiles", {"nodeId": node, "files": [os.path.join(downloads, "editor_path.json")]})
    page.wait_for("editor.keys.length === 3")
    assert same_cameras(keys(page), saved), "uploaded keyframes differ"
    assert page.evaluate("[document.getElementById('path_fps').value, document.getElementById('path_duration').value]") \
        == [str(FPS), "1"], "the uploaded settings"
    return message


def run_editor(args, browser, tmp):
    model, data, inputs = shipped(os.path.abspath(args.root))
    state = os.path.join(tmp, "state.safetensors")
    subprocess.run([args.lact, "encode", "--model", model, "--data", data, "--inputs", inputs, "-o", state],
                   check=True, capture_output=True)
    out, downloads = os.path.join(tmp, "out"), os.path.join(tmp, "downloads")
    os.makedirs(downloads)
    server = Server(os.path.abspath(args.lact), "--state", state, "--out", out, "--max-side", "128")
    chrome = None
    try:
        scene = server.ready()
        chrome, url = launch_chromium(browser, os.path.join(tmp, "profile"))
        page = DevTools(url)
        session, page.session = page.session, None  # a browser-wide command
        page.call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        page.session = session
        page.call("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        page.call("Page.enable")
        page.call("Page.navigate", {"url": server.url})
        page.wait_for("document.getElementById('stage').textContent.startsWith('ready') && "
                      "document.getElementById('format').textContent === 'png'")
        add_keyframes(page)
        print("ok: 3 keyframes added by clicks (a 4th deleted); keyframe 2 at 40 degrees; moved down and up")
        page.set_input("path_duration", "1")
        page.set_input("path_fps", str(FPS))
        page.set_input("path_smooth", "0.5")
        first, _ = scrub(page, server, 0)
        middle, worst = scrub(page, server, 6)
        assert first != middle, "frames 0 and 6 of the path look alike"
        print("ok: timeline frames 0 and 6 = POST /api/render of the server's cameras (canvas exact, screenshot "
              "within %d levels)" % worst)
        info, values = check_video(args, state, page, downloads, tmp, scene)
        print("ok: video %s; its MP4 downloaded through the page; frames 0 and %d against lact render --path of the "
              "downloaded path: PSNR %.2f and %.2f dB" % (info, FRAMES - 1, values[0], values[1]))
        print("ok: %s; loaded back and uploaded: the same keyframes" % check_save_load_upload(page, out, downloads))
        return 0
    finally:
        stop_chromium(chrome)
        rc, _, se = server.stop()
        assert rc == 0, se[-2000:]


def main():
    return browser_main(__doc__.splitlines()[0], run_editor, "lact_serve_editor_", ffmpeg=True)


if __name__ == "__main__":
    sys.exit(main())
