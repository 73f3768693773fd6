#!/usr/bin/env python3
"""lact view's quit keys (issue 52, item 5): Esc, and Q outside fly mode, end the viewer with exit 0. The keys
are sent as a user's through the X server's XTest extension (libXtst, by ctypes), under xvfb-run.

Usage: xvfb-run -a -s "-screen 0 1600x1000x24" env PYTHONPATH=tests/common:. python3 tests/cli/view_keys_test.py --lact build/app/lact
"""
import argparse
import ctypes
import ctypes.util
import os
import subprocess
import sys
import time
import unittest
from cli_common import ROOT

ARGS = None
XK_ESCAPE, XK_Q = 0xFF1B, 0x0071


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
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.x11.XCloseDisplay.argtypes = [ctypes.c_void_p]

    def press(self, keysym):
        self.xtst.XTestFakeMotionEvent(self.display, -1, 300, 200, 0)  # over the window: it has the focus
        code = self.x11.XKeysymToKeycode(self.display, keysym)
        self.xtst.XTestFakeKeyEvent(self.display, code, 1, 0)
        self.xtst.XTestFakeKeyEvent(self.display, code, 0, 0)
        self.x11.XFlush(self.display)

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
            keyboard.close()
            if p.poll() is None:
                p.kill()
            so, se = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, se)

    def test_escape_quits(self):
        self.quits_on(XK_ESCAPE)

    def test_q_quits(self):
        self.quits_on(XK_Q)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lact", required=True)
    ARGS, rest = parser.parse_known_args()
    ARGS.lact = os.path.abspath(ARGS.lact)
    if not os.environ.get("DISPLAY"):
        sys.exit("viewer_keys_test: no DISPLAY (run under xvfb-run)")
    unittest.main(argv=[sys.argv[0]] + rest)
