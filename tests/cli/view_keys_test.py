#!/usr/bin/env python3
"""lact view's quit keys (issue 52, item 5): Esc, and Q outside fly mode, end the viewer with exit 0; and a camera
path recorded with K and saved with the panel's button in a --normalize-poses session records that world, so that
`lact render --path` renders it only in that world; Enter and Esc close the error popup; closing the window during
an export takes it off the screen at once while the export finishes; a path of more frames than the cap is refused
in the popup with its keys unchanged. The keys and clicks are sent as a user's through the X server's XTest
extension (libXtst, by ctypes), under xvfb-run.

Usage: xvfb-run -a -s "-screen 0 1600x1000x24" env PYTHONPATH=tests/common:. python3 tests/cli/view_keys_test.py --lact build/app/lact
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import zlib
from cli_common import ROOT

ARGS = None
XK_ESCAPE, XK_Q, XK_K, XK_BRACKETRIGHT, XK_RETURN, XK_F12 = 0xFF1B, 0x0071, 0x006B, 0x005D, 0xFF0D, 0xFFC9
XK_P = 0x0070
SHIPPED = ["--model", os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors"), "--data",
           os.path.join(ROOT, "examples", "gso_toy_64")]


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def close_window(keyboard, p):
    """The keyboard's connection closed and the viewer ended (killed if it is still running): its output."""
    keyboard.close()
    if p.poll() is None:
        p.kill()
    return p.communicate(timeout=60)


class Keyboard:
    """Key presses as the X server's own (XTest), to whichever window has the focus (the only one, here)."""

    def __init__(self):
        self.x11 = ctypes.CDLL(ctypes.util.find_library("X11"))
        self.xtst = ctypes.CDLL(ctypes.util.find_library("Xtst"))
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.display = self.x11.XOpenDisplay(None)
        assert self.display, "no X display"
        self.x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.xtst.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                   ctypes.c_ulong]
        self.xtst.XTestFakeButtonEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.x11.XCloseDisplay.argtypes = [ctypes.c_void_p]

    def press(self, keysym, x=300, y=200):
        self.xtst.XTestFakeMotionEvent(self.display, -1, x, y, 0)  # over the window: it has the focus
        code = self.x11.XKeysymToKeycode(self.display, keysym)
        self.xtst.XTestFakeKeyEvent(self.display, code, 1, 0)
        self.xtst.XTestFakeKeyEvent(self.display, code, 0, 0)
        self.x11.XFlush(self.display)
        time.sleep(0.3)

    def click(self, x, y):
        """A left click, the pointer resting there first (ImGui takes a button under the pointer of a frame)."""
        for dx in (1, 0):
            self.xtst.XTestFakeMotionEvent(self.display, -1, x + dx, y, 0)
            self.x11.XFlush(self.display)
            time.sleep(0.3)
        for down in (1, 0):
            self.xtst.XTestFakeButtonEvent(self.display, 1, down, 0)
            self.x11.XFlush(self.display)
            time.sleep(0.2)

    def set_desktop_dpi(self, dpi):
        """As `xrdb -merge` of "Xft.dpi: DPI" (what GNOME and KDE set for a high-DPI screen; GLFW reads its content
        scale from it); None removes the resources again."""
        self.x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        self.x11.XDefaultRootWindow.restype = ctypes.c_ulong
        self.x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        self.x11.XInternAtom.restype = ctypes.c_ulong
        root = self.x11.XDefaultRootWindow(self.display)
        atom = self.x11.XInternAtom(self.display, b"RESOURCE_MANAGER", 0)
        if dpi is None:
            self.x11.XDeleteProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
            self.x11.XDeleteProperty(self.display, root, atom)
        else:
            self.x11.XChangeProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                                                 ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
            data = b"Xft.dpi:\t%d\n" % dpi
            xa_string = 31
            self.x11.XChangeProperty(self.display, root, atom, xa_string, 8, 0, data, len(data))
        self.x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.x11.XSync(self.display, 0)

    def lact_window_shown(self):
        """Whether a window titled "lact view: ..." is on the screen (mapped: IsViewable) among the root's children
        (xvfb-run has no window manager to reparent it)."""
        class Attributes(ctypes.Structure):  # XWindowAttributes
            _fields_ = [(name, ctypes.c_int) for name in ("x", "y", "width", "height", "border_width", "depth")] + [
                ("visual", ctypes.c_void_p), ("root", ctypes.c_ulong)] + [
                (name, ctypes.c_int) for name in ("klass", "bit_gravity", "win_gravity", "backing_store")] + [
                ("backing_planes", ctypes.c_ulong), ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int),
                ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int), ("map_state", ctypes.c_int),
                ("all_event_masks", ctypes.c_long), ("your_event_mask", ctypes.c_long),
                ("do_not_propagate_mask", ctypes.c_long), ("override_redirect", ctypes.c_int),
                ("screen", ctypes.c_void_p)]
        x11, is_viewable = self.x11, 2
        x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        x11.XDefaultRootWindow.restype = ctypes.c_ulong
        x11.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                                   ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                                   ctypes.POINTER(ctypes.c_uint)]
        x11.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_char_p)]
        x11.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(Attributes)]
        x11.XFree.argtypes = [ctypes.c_void_p]
        root, parent, children, count = ctypes.c_ulong(), ctypes.c_ulong(), ctypes.POINTER(ctypes.c_ulong)(), \
            ctypes.c_uint()
        x11.XSync(self.display, 0)
        x11.XQueryTree(self.display, x11.XDefaultRootWindow(self.display), ctypes.byref(root), ctypes.byref(parent),
                       ctypes.byref(children), ctypes.byref(count))
        shown = False
        for i in range(count.value):
            name, attributes = ctypes.c_char_p(), Attributes()
            if x11.XFetchName(self.display, children[i], ctypes.byref(name)) and name.value:
                if name.value.startswith(b"lact view") and x11.XGetWindowAttributes(
                        self.display, children[i], ctypes.byref(attributes)):
                    shown = shown or attributes.map_state == is_viewable
        if children:
            x11.XFree(children)
        return shown

    def close(self):
        self.x11.XCloseDisplay(self.display)


class QuitKeys(unittest.TestCase):
    def quits_on(self, keysym):
        p = subprocess.Popen([ARGS.lact, "view", "--model", os.path.join(ROOT, "models", "lact_tiny_obj64.safetensors"),
                              "--data", os.path.join(ROOT, "examples", "gso_toy_64"), "--inputs",
                              "16,20,24,28,34,38,42,46", "--threads", "1"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        keyboard = Keyboard()
        try:
            deadline = time.time() + 120
            while p.poll() is None and time.time() < deadline:
                time.sleep(2)  # the window opens and encodes first; a key before it is lost, so send it again
                keyboard.press(keysym)
            self.assertIsNotNone(p.poll(), "the viewer did not quit")
        finally:
            so, se = close_window(keyboard, p)
        self.assertEqual(p.returncode, 0, se)

    def test_escape_quits(self):
        self.quits_on(XK_ESCAPE)

    def test_q_quits(self):
        self.quits_on(XK_Q)


def png_pixels(path):
    """A PNG's header and its decompressed image data: equal for two of lact's PNGs of equal pixels."""
    with open(path, "rb") as f:
        data = f.read()
    pos, header, idat = 8, b"", b""
    while pos < len(data):
        length, kind = int.from_bytes(data[pos:pos + 4], "big"), data[pos + 4:pos + 8]
        if kind == b"IHDR":
            header = data[pos + 8:pos + 8 + length]
        elif kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return header, zlib.decompress(idat)


def png_rgb(path):
    """A PNG of lact's (8-bit RGB, each row's filter none or one of the four) -> rows of [r, g, b] lists."""
    header, raw = png_pixels(path)
    width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:8], "big")
    stride, rows, previous = 3 * width, [], [0] * (3 * width)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        row = []
        for x in range(stride):
            a, b = row[x - 3] if x >= 3 else 0, previous[x]
            c = previous[x - 3] if x >= 3 else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            paeth = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            row.append((line[x] + (0, a, b, (a + b) // 2, paeth)[kind]) & 255)
        rows.append(row)
        previous = row
    return [[r[3 * x:3 * x + 3] for x in range(width)] for r in rows]


class HighDpiDesktop(unittest.TestCase):
    """Before, a desktop set to twice the pixels per unit (Xft.dpi 192) got a window of --window pixels with 13-pixel
    text, half the size it asks for; now the window, the panel and its text are twice as large, laid out alike."""

    def screenshot(self, keyboard, dpi, folder):
        keyboard.set_desktop_dpi(dpi)
        shot = os.path.join(folder, "dpi%d.png" % dpi)
        try:
            subprocess.run([ARGS.lact, "view"] + SHIPPED + ["--inputs", "16,20,24,28,34,38,42,46", "--camera", "18",
                                                            "--window", "400x640", "--threads", "1", "--frames", "5",
                                                            "--screenshot", shot, "--exit"], check=True,
                           capture_output=True, timeout=120)
        finally:
            keyboard.set_desktop_dpi(None)
        with open(shot[:-4] + ".json") as f:
            return json.load(f), png_rgb(shot), png_rgb(shot[:-4] + ".view.png")

    def test_twice_the_pixels_per_unit(self):
        keyboard, folder = Keyboard(), tempfile.mkdtemp(prefix="lact_view_dpi_")
        try:
            (info1, window1, view1), (info2, window2, view2) = (self.screenshot(keyboard, dpi, folder)
                                                                for dpi in (96, 192))
        finally:
            keyboard.close()
            shutil.rmtree(folder, ignore_errors=True)
        self.assertEqual((info1["window_size"], info2["window_size"]), ([640, 400], [1280, 800]))
        self.assertEqual((info1["view_region"]["framebuffer_scale"], info2["view_region"]["framebuffer_scale"]),
                         (1.0, 2.0))
        # The panel's room in units is the same (its text, with timings in it, may wrap a line apart).
        room = ("width", "height")
        self.assertEqual([info1["panel"][k] for k in room], [info2["panel"][k] for k in room])
        # The first section header, a bar of one colour: twice as tall in pixels.
        for info, window, scale in ((info1, window1, 1), (info2, window2, 2)):
            column = [row[100 * scale] for row in window[:60 * scale]]
            self.assertEqual(column.count(column[17 * scale]), 17 * scale, info)
        # The novel view: the same 64x64 render, each pixel a zoom x zoom block of the window.
        self.assertEqual(view1, view2)
        region = info2["view_region"]
        zoom = int(region["zoom"])
        for y in range(64):
            for x in range(64):
                block = {tuple(window2[region["y"] + y * zoom + dy][region["x"] + x * zoom + dx])
                         for dy in range(zoom) for dx in range(zoom)}
                self.assertEqual(block, {tuple(view2[y][x])}, (x, y))


class CameraPathWorld(unittest.TestCase):
    """Before, a path saved in the window recorded no world: `lact render --path` of a path recorded under
    --normalize-poses inputs rendered it in raw coordinates without a word (frames up to 60/255 off)."""

    # The side panel's headers are 23 units apart. Closing Performance, Scene, Camera and Quality (Display and
    # Screenshot start closed) puts Camera path's header at y 155 whatever the scene shows, its save button 155 below.
    CLOSE_HEADERS = (17, 40, 63, 86)
    CAMERA_PATH_HEADER, SAVE = (60, 155), (26, 310)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lact_view_path_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record_and_save(self, flags):
        p = subprocess.Popen([ARGS.lact, "view"] + flags, cwd=self.tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        keyboard = Keyboard()
        saved = os.path.join(self.tmp, "camera_path.json")
        try:
            open_the_camera_path_section(keyboard)
            for key in (XK_K, XK_BRACKETRIGHT, XK_K):  # the start view, then the next: two keyframes
                keyboard.press(key, 800, 400)
            deadline = time.time() + 60
            while not os.path.exists(saved) and p.poll() is None and time.time() < deadline:
                keyboard.click(*self.SAVE)  # again if a click was lost: the window replaces its own file
                time.sleep(1)
            keyboard.press(XK_ESCAPE, 800, 400)
            p.wait(timeout=60)
        finally:
            so, se = close_window(keyboard, p)
        self.assertEqual(p.returncode, 0, se)
        self.assertTrue(os.path.exists(saved), "no camera path saved: %s%s" % (so, se))
        with open(saved) as f:
            return saved, json.load(f)

    def test_a_saved_path_records_the_sessions_world(self):
        scene = SHIPPED + ["--inputs", "16,18,20,22", "--normalize-poses", "inputs", "--threads", "1"]
        saved, path = self.record_and_save(scene + ["--targets", "19,21"])
        self.assertEqual(len(path["frames"]), 31)  # two keys, 30 frames per segment
        # The reference world: the pose transform `lact encode` records for the same inputs and normalisation.
        state = os.path.join(self.tmp, "state.safetensors")
        subprocess.run([ARGS.lact, "encode"] + scene + ["-o", state], check=True, capture_output=True)
        with open(state, "rb") as f:
            metadata = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
        self.assertEqual(path["frame"]["normalize_poses"], "inputs")
        for got, want in zip(path["frame"]["pose_world"], json.loads(metadata["pose_world"])):
            self.assertAlmostEqual(got, want, places=9)
        self.assertAlmostEqual(path["frame"]["pose_scale"], float(metadata["pose_scale"]), places=9)
        # In raw coordinates the path is refused in one line naming it; in its world, frame 0 is test view 19.
        raw = subprocess.run([ARGS.lact, "render"] + SHIPPED + ["--inputs", "16,18,20,22", "--path", saved, "--out",
                                                                 os.path.join(self.tmp, "raw"), "--quiet"],
                             capture_output=True, text=True)
        self.assertEqual(raw.returncode, 1, raw.stdout + raw.stderr)
        self.assertEqual(len(raw.stderr.strip().splitlines()), 1, raw.stderr)
        self.assertIn(saved, raw.stderr)
        out = os.path.join(self.tmp, "render")
        for flags in (["--path", saved, "--out", os.path.join(out, "path")],
                      ["--targets", "19", "--out", os.path.join(out, "view")]):
            subprocess.run([ARGS.lact, "render"] + scene + flags + ["--quiet"], check=True, capture_output=True)
        self.assertEqual(png_pixels(os.path.join(out, "path", "frame_0000.png")),
                         png_pixels(os.path.join(out, "view", "gso_toy_64", "19.png")))


def open_the_camera_path_section(keyboard):
    """Once the window opened (its panel is laid out from the first frame): the other sections closed, the camera
    path's opened, so that its buttons sit where CameraPathWorld's positions say."""
    time.sleep(5)
    for y in CameraPathWorld.CLOSE_HEADERS:
        keyboard.click(60, y)
    keyboard.click(*CameraPathWorld.CAMERA_PATH_HEADER)


def screenshots_in(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith("lact_view_") and f.endswith(".view.png"))


def popup_refuses_then_closes(test, folder, keyboard, action, close_key, shots_before):
    """`action` opens the error popup, told from the keys it holds: F12 takes no screenshot (into `folder`, the
    viewer's working folder) while it shows; `close_key` closes it, and then F12 does."""
    action()
    time.sleep(1)
    keyboard.press(XK_F12, 800, 400)
    time.sleep(1)
    test.assertEqual(len(screenshots_in(folder)), shots_before, "no error popup: a screenshot was taken")
    keyboard.press(close_key, 800, 400)  # closes the message, and does not quit
    keyboard.press(XK_F12, 800, 400)
    deadline = time.time() + 10
    while len(screenshots_in(folder)) == shots_before and time.time() < deadline:
        time.sleep(0.2)
    test.assertEqual(len(screenshots_in(folder)), shots_before + 1, "the error popup still holds the keyboard")


class ErrorPopupKeys(unittest.TestCase):
    """Before, a bad camera path file's error popup held the keyboard and ignored Esc (and a quick Enter): the
    viewer neither closed the message nor quit, and the keys stayed dead until the OK button was clicked. Now Enter
    or Esc closes the message (as OK does) and the next Esc quits. The popup is told from the keys it holds: F12
    takes no screenshot while it shows, and does once it is closed."""

    LOAD = (70, 310)  # the camera path's load button, with the sections closed as CameraPathWorld closes them

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lact_view_popup_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def closes_the_message(self, keyboard, key, shots_before):
        # camera_path.json is not JSON: the error popup
        popup_refuses_then_closes(self, self.tmp, keyboard, lambda: keyboard.click(*self.LOAD), key, shots_before)

    def test_enter_and_escape_close_the_error_popup(self):
        with open(os.path.join(self.tmp, "camera_path.json"), "w") as f:
            f.write("{not a camera path")
        p = subprocess.Popen([ARGS.lact, "view"] + SHIPPED + ["--inputs", "16,20,24,28,34,38,42,46", "--threads",
                                                              "1"], cwd=self.tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        keyboard = Keyboard()
        try:
            open_the_camera_path_section(keyboard)
            self.closes_the_message(keyboard, XK_RETURN, 0)
            self.closes_the_message(keyboard, XK_ESCAPE, 1)
            self.assertIsNone(p.poll(), "the Esc that closed the message quit the viewer")
            keyboard.press(XK_ESCAPE, 800, 400)
            p.wait(timeout=30)
        finally:
            so, se = close_window(keyboard, p)
        self.assertEqual(p.returncode, 0, se)
        self.assertNotIn("camera_path.json", se)  # shown in the window only


class CloseDuringExport(unittest.TestCase):
    """Before, closing the window (Esc) while "export frames" ran left it on the screen, frozen, until the whole
    export had been rendered. Now it leaves the screen at once, the export still finishes (its files whole) and the
    viewer says so in one line, then exits 0."""

    KEYS = 12  # 11 segments of 30 frames: an export long enough to close the window in the middle of it
    EXPORT = (55, 380)  # the export button, with the sections closed as CameraPathWorld closes them

    def test_the_window_goes_at_once_and_the_export_finishes(self):
        tmp = tempfile.mkdtemp(prefix="lact_view_close_")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        folder, frames = os.path.join(tmp, "viewer_path"), 30 * (self.KEYS - 1) + 1
        p = subprocess.Popen([ARGS.lact, "view"] + SHIPPED + ["--inputs", "16,20,24,28,34,38,42,46", "--threads",
                                                              "1"], cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        keyboard = Keyboard()
        written = lambda: len([f for f in os.listdir(folder) if f.endswith(".png")]) if os.path.isdir(folder) else 0
        try:
            open_the_camera_path_section(keyboard)
            for _ in range(self.KEYS):  # a keyframe on each camera in turn
                keyboard.press(XK_K, 800, 400)
                keyboard.press(XK_BRACKETRIGHT, 800, 400)
            keyboard.click(*self.EXPORT)
            deadline = time.time() + 60
            while written() == 0 and p.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            self.assertGreater(written(), 0, "the export did not start")
            keyboard.press(XK_ESCAPE, 800, 400)
            while keyboard.lact_window_shown() and p.poll() is None:
                time.sleep(0.05)
            at_close = written()  # what the export had written when the window left the screen
            alive = p.poll() is None
            p.wait(timeout=120)
        finally:
            so, se = close_window(keyboard, p)
        self.assertEqual(p.returncode, 0, se)
        self.assertTrue(alive and at_close < frames, "the window stayed until the export ended (%d of %d frames)" %
                        (at_close, frames))
        self.assertEqual(written(), frames, so + se)  # the export finished: every frame
        self.assertEqual(len(se.strip().splitlines()), 1, se)
        self.assertIn("finishing the camera path export to viewer_path", se)


class PathOverTheCap(unittest.TestCase):
    """Before, play, save and export built the whole interpolated path whatever its size: a long loaded path with a
    raised frames/segment could run the viewer out of memory (play and export outside any catch). Now a path of more
    than kMaxPathFrames (100000) frames is refused in the error popup with the keys unchanged: 500 loaded keys at
    frames/segment near the slider's 240 make 499 x (201 or more) + 1 > 100000 frames. The popup is told from the
    keys it holds (F12 takes no screenshot while it shows); the keys from a save once frames/segment is back at 1."""

    SLIDER_MAX, SLIDER_MIN = (219, 218), (9, 218)  # the frames/segment slider's right and left ends
    KEYS = 500

    def test_play_and_save_are_refused_and_the_keys_stay(self):
        tmp = tempfile.mkdtemp(prefix="lact_view_cap_")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        saved = os.path.join(tmp, "camera_path.json")
        subprocess.run([ARGS.lact, "path", "turntable", "--frames", str(self.KEYS), "--size", "64", "-o", saved],
                       check=True, capture_output=True)
        written = file_bytes(saved)
        p = subprocess.Popen([ARGS.lact, "view"] + SHIPPED + ["--inputs", "16,20,24,28,34,38,42,46", "--threads",
                                                              "1", "--force"], cwd=tmp, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        keyboard = Keyboard()
        try:
            open_the_camera_path_section(keyboard)
            keyboard.click(*ErrorPopupKeys.LOAD)  # 500 keys, 1 frame/segment
            time.sleep(1)
            keyboard.click(*self.SLIDER_MAX)
            popup_refuses_then_closes(self, tmp, keyboard, lambda: keyboard.press(XK_P, 800, 400), XK_RETURN, 0)
            popup_refuses_then_closes(self, tmp, keyboard, lambda: keyboard.click(*CameraPathWorld.SAVE), XK_RETURN,
                                      1)
            self.assertEqual(file_bytes(saved), written, "a path over the cap was saved")
            keyboard.click(*self.SLIDER_MIN)  # the keys alone: saved
            keyboard.click(*CameraPathWorld.SAVE)
            deadline = time.time() + 30
            while file_bytes(saved) == written and p.poll() is None and time.time() < deadline:
                time.sleep(0.2)
            self.assertIsNone(p.poll(), "the viewer ended")
            keyboard.press(XK_ESCAPE, 800, 400)
            p.wait(timeout=30)
        finally:
            so, se = close_window(keyboard, p)
        self.assertEqual(p.returncode, 0, se)
        with open(saved) as f:
            self.assertEqual(len(json.load(f)["frames"]), self.KEYS)  # the keys, unchanged by the refusals


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lact", required=True)
    ARGS, rest = parser.parse_known_args()
    ARGS.lact = os.path.abspath(ARGS.lact)
    if not os.environ.get("DISPLAY"):
        sys.exit("viewer_keys_test: no DISPLAY (run under xvfb-run)")
    unittest.main(argv=[sys.argv[0]] + rest)
