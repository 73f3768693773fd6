"""A small WebSocket client (RFC 6455) on the standard library, for lact serve's tests and benchmark and for the
DevTools protocol of headless Chromium: python3-websockets is not needed. Client frames are masked; messages may
arrive fragmented; ping is answered; close ends the connection."""
import base64
import json
import os
import socket
import struct
import urllib.parse


class Closed(Exception):
    """The server closed the connection (or it dropped)."""


class WebSocket:
    def __init__(self, url, origin=None, timeout=30, headers=None):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        lines = ["GET %s HTTP/1.1" % target, "Host: %s:%d" % (parts.hostname, parts.port or 80), "Upgrade: websocket",
                 "Connection: Upgrade", "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
        if origin:
            lines.append("Origin: " + origin)
        lines += ["%s: %s" % kv for kv in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buffer = b""
        head = self._read_until(b"\r\n\r\n")
        status_line = head.split(b"\r\n", 1)[0].decode()
        self.status = int(status_line.split()[1])
        if self.status != 101:
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = self._read_exact(length) if length else b""
            self.sock.close()
            raise HandshakeRefused(self.status, body.decode(errors="replace"))

    def _read_until(self, marker):
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed("connection closed during the handshake")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _read_exact(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise Closed("connection closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send_frame(self, opcode, payload, fin=True):
        header = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, message):
        """A str goes as text, bytes as binary."""
        if isinstance(message, str):
            self.send_frame(0x1, message.encode())
        else:
            self.send_frame(0x2, message)

    def send_json(self, value):
        self.send(json.dumps(value))

    def recv(self):
        """The next message: str (text) or bytes (binary). Raises Closed at the end."""
        parts, kind = [], None
        while True:
            b0, b1 = self._read_exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read_exact(8))[0]
            payload = self._read_exact(n)
            if opcode == 0x8:
                raise Closed(payload[2:].decode(errors="replace"))
            if opcode == 0x9:
                self.send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode in (0x1, 0x2):
                kind = opcode
            parts.append(payload)
            if b0 & 0x80:
                data = b"".join(parts)
                return data.decode() if kind == 0x1 else data

    def close(self):
        try:
            self.send_frame(0x8, struct.pack(">H", 1000))
        except OSError:
            pass
        self.sock.close()


class HandshakeRefused(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body))
        self.status, self.body = status, body


def frame_parts(message):
    """A lact serve frame (binary: 4-byte little-endian header length, JSON header, images) -> (header, {name: bytes})."""
    length = struct.unpack("<I", message[:4])[0]
    header = json.loads(message[4:4 + length])
    images, offset = {}, 4 + length
    for image in header["images"]:
        images[image["name"]] = message[offset:offset + image["bytes"]]
        offset += image["bytes"]
    return header, images
