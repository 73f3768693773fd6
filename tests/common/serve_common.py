"""What lact serve's tests and benchmark share: a server started as a real process (its URL read from its first
lines), HTTP requests on the standard library, and 8-bit PNGs decoded without PIL or numpy."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.parse
import zlib

URL = re.compile(r"open (http://\S+)")


class Server:
    """`lact serve ARGS` on `port` (0: a free one); url, host, port and token from what it prints; ready() waits for
    the encode."""

    def __init__(self, lact, *args, env=None, preexec_fn=None, port=0):
        self.proc = subprocess.Popen([lact, "serve", "--port", str(port)] + [str(a) for a in args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     preexec_fn=preexec_fn,
                                     errors="backslashreplace")  # bytes that are not UTF-8 shown, not fatal
        self.stderr_lines = []
        self.stdout_lines = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        deadline = time.time() + 120
        self.url = None
        while time.time() < deadline and self.url is None:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.stdout_lines.append(line)
            m = URL.search(line)
            if m:
                self.url = m.group(1)
        if self.url is None:
            self.proc.wait(timeout=30)
            raise RuntimeError("lact serve printed no URL: %s %s" % (self.stdout_lines, self.stderr_lines))
        self._stdout_reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._stdout_reader.start()
        parts = urllib.parse.urlsplit(self.url)
        self.host, self.port = parts.hostname, parts.port
        self.token = urllib.parse.parse_qs(parts.query).get("token", [""])[0]

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.stdout_lines.append(line)

    def request(self, method, path, body=None, token=True, headers=None, timeout=60):
        """(status, content type, body bytes); the token added to the query unless token is False."""
        if token and self.token:
            path += ("&" if "?" in path else "?") + "token=" + self.token
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type"), response.read()
        finally:
            connection.close()

    def scene(self):
        status, _, body = self.request("GET", "/api/scene")
        assert status == 200, (status, body)
        return json.loads(body)

    def ready(self, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            scene = self.scene()
            if scene["status"]["status"] == "ready":
                return scene
            assert scene["status"]["status"] == "encoding", scene["status"]
            time.sleep(0.2)
        raise RuntimeError("the scene was not ready in %d s" % timeout)

    def render(self, camera, query=""):
        return self.request("POST", "/api/render" + query, body=json.dumps(camera).encode(),
                            headers={"Content-Type": "application/json"})

    def stream_url(self, token=None):
        token = self.token if token is None else token
        return "ws://%s:%d/stream?token=%s" % (self.host, self.port, urllib.parse.quote(token))

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig`; returns (exit code, stdout, stderr) once it ends."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        self._drain.join(timeout=5)
        self._stdout_reader.join(timeout=5)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc, "".join(self.stdout_lines), "".join(self.stderr_lines)


def raw_exchange(host, port, data, timeout=30):
    """Sends `data` as is on a new connection and reads until the server closes it or a whole response is in:
    (status or None, the bytes read). A server that closes while `data` is still being sent is not an error."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_reply(s)


def read_reply(s):
    """(status or None, the bytes read) of the one response on socket `s`, read until its Content-Length is in or
    the server closes (or resets) the connection."""
    received = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        if length and len(body) >= int(length.group(1)):
            break
    status = re.match(rb"HTTP/1\.[01] (\d{3})", received)
    return (int(status.group(1)) if status else None), received


def decode_png(data):
    """8-bit RGB or RGBA PNG (non-interlaced) -> (width, height, channels, bytes of the rows without filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    out, previous = bytearray(), bytearray(stride)
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + a) & 255
            elif kind == 2:
                row[i] = (row[i] + b) & 255
            elif kind == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += row
        previous = row
    return width, height, channels, bytes(out)


def rgb(data):
    """(width, height, RGB bytes) of a PNG."""
    width, height, channels, pixels = decode_png(data)
    if channels == 4:
        pixels = bytes(b for i, b in enumerate(pixels) if i % 4 != 3)
    return width, height, pixels


def camera_path(frames):
    return {"format": "lact camera path v1", "frames": frames}


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def shipped(root):
    """The shipped model and example scene, and the example's 8 inputs (README)."""
    return (os.path.join(root, "models", "lact_tiny_obj64.safetensors"), os.path.join(root, "examples", "gso_toy_64"),
            "16,20,24,28,34,38,42,46")


def serve_test_args(description):
    """The options lact serve's test files are registered with: (args with --lact and --root made absolute, the
    arguments left for unittest). No LPIPS weights a machine's `lact model fetch lpips` cached are read: the tests
    get a cache folder of their own."""
    import argparse
    import tempfile
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lact", required=True)
    parser.add_argument("--root", required=True, help="the checkout (models/, examples/)")
    args, rest = parser.parse_known_args()
    args.lact, args.root = os.path.abspath(args.lact), os.path.abspath(args.root)
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="lact_serve_cache_")
    return args, rest


def scene_index(root, folder, names=("toy_a", "toy_b", "toy_c")):
    """An index of scenes under `folder`, each the shipped example's cameras and images, every second one's
    colours inverted (so a render tells the scenes apart): the index's path."""
    from PIL import Image, ImageOps
    _, example, _ = shipped(root)
    for k, name in enumerate(names):
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(example, "opencv_cameras.json"), "rb") as f, \
                open(os.path.join(folder, name, "opencv_cameras.json"), "wb") as g:
            g.write(f.read())
        for file in sorted(f for f in os.listdir(example) if f.endswith(".png")):
            with Image.open(os.path.join(example, file)) as png:
                image = png.convert("RGB")
            (ImageOps.invert(image) if k % 2 else image).save(os.path.join(folder, name, file))
    return write_json(os.path.join(folder, "index.json"), [n + "/opencv_cameras.json" for n in names])


def decoded_frames(mp4, width, height):
    """Every frame of `mp4` decoded by ffmpeg as 8-bit RGB bytes."""
    p = subprocess.run(["ffmpeg", "-v", "error", "-i", mp4, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    size = width * height * 3
    return [p.stdout[i:i + size] for i in range(0, len(p.stdout), size)]


def psnr(a, b):
    """PSNR (dB) of two 8-bit byte strings of one length."""
    import numpy as np
    x, y = np.frombuffer(a, np.uint8).astype(np.float64), np.frombuffer(b, np.uint8).astype(np.float64)
    mse = np.mean((x - y) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def page_harness_command(test, root, url, view, mode=None):
    """The command line of the page's script under Node (tests/browser/serve_page_harness.js), or a skip."""
    node = shutil.which("node") or shutil.which("nodejs")
    if not node or subprocess.run([node, "--experimental-websocket", "-e", "if (typeof WebSocket !== 'function')"
                                   " process.exit(1)"], capture_output=True).returncode:
        test.skipTest("no Node.js with WebSocket (node --experimental-websocket, Node 20.10 or later)")
    harness = os.path.join(root, "tests", "browser", "serve_page_harness.js")
    return [node, "--experimental-websocket", harness, url, str(view)] + ([mode] if mode else [])


def run_page_harness(test, root, url, view, mode=None):
    """The page's script under Node (tests/browser/serve_page_harness.js) against `url`: what it showed, or a skip.
    `mode`: one of the harness's checks (failed, sizes, oversize) instead of its tour."""
    p = subprocess.run(page_harness_command(test, root, url, view, mode), capture_output=True, text=True, timeout=300)
    test.assertEqual(p.returncode, 0, p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])
