"""A loopback stand-in for the Hugging Face hub (tests only): files under the hub's own paths
(/airsplay/lact_nvs/resolve/main/NAME.pt), each answered as huggingface.co answers an LFS file: a 302 to the
storage (here /storage/NAME.pt) carrying X-Linked-Etag (the SHA-256) and X-Linked-Size, then the bytes with HTTP
Range support (206 Partial Content). A name starting with "/" is served at that path instead (a mirror of
another publisher's files, as LPIPS's are: /models/alexnet-owt-7be5be79.pth). Knobs for the failure tests: a wrong SHA-256, no SHA-256 at all, and a
connection cut after some bytes (an interrupted download).
"""
import hashlib
import http.server
import re
import threading

PREFIX = "/airsplay/lact_nvs/resolve/main/"


class Hub:
    def __init__(self, files):
        self.files = dict(files)  # name (obj_res256.pt) -> bytes
        self.wrong_sha = False
        self.no_sha = False
        self.cut_after = None  # bytes sent before the connection is cut (once)
        self.ranges = []  # the Range headers the storage saw
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.answer(body=False)

            def do_GET(self):
                self.answer(body=True)

            def answer(self, body):
                if self.path.startswith(PREFIX) and self.path[len(PREFIX):] in hub.files:
                    return self.redirect(self.path[len(PREFIX):])
                if self.path.startswith("/") and self.path in hub.files:
                    return self.redirect(self.path)
                stored = self.path[len("/storage/"):]
                if self.path.startswith("/storage/") and (stored in hub.files or "/" + stored in hub.files):
                    return self.send_file(hub.files.get(stored, hub.files.get("/" + stored)), body)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def redirect(self, name):
                data = hub.files[name]
                sha = hashlib.sha256(data + (b"x" if hub.wrong_sha else b"")).hexdigest()
                self.send_response(302)
                self.send_header("Location", "/storage/" + name.lstrip("/"))
                if not hub.no_sha:
                    self.send_header("X-Linked-Etag", '"%s"' % sha)
                self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("ETag", '"0123abcd"')  # a git blob id, as the hub sends: not a SHA-256
                self.send_header("Content-Length", "0")
                self.end_headers()

            def send_file(self, data, body):
                start = 0
                wanted = self.headers.get("Range")
                if wanted and body:
                    hub.ranges.append(wanted)
                    start = int(re.fullmatch(r"bytes=(\d+)-", wanted).group(1))
                if start >= len(data) and wanted:
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206 if wanted else 200)
                if wanted:
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if not body:
                    return
                payload = data[start:]
                if hub.cut_after is not None:
                    payload, hub.cut_after = payload[:hub.cut_after], None
                    self.wfile.write(payload)
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(payload)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
