#!/usr/bin/env python3
"""lact's image decoding against PIL's, the official loader's: every colour type and bit depth PNG has, the JPEG
variants PIL writes, and every image of the shipped example, the fixture scene and the shared data, compared
pixel for pixel with Image.open(f).convert("RGBA"). Also has_alpha as lact reported it with stb_image before
(colour types with alpha, or any tRNS chunk), and the refusal of 16-bit greyscale.

    image_decode_parity.py --dump build/tests/image_decode_dump [--data ../shared/data] [--fixture DIR]
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def pack_rows(samples, depth):
    """samples: uint array [rows, values]; packed big-endian at `depth` bits, each row with filter byte 0."""
    out = b""
    for row in samples:
        if depth == 16:
            out += b"\0" + row.astype(">u2").tobytes()
        elif depth == 8:
            out += b"\0" + row.astype(np.uint8).tobytes()
        else:
            bits = "".join(format(int(v), "0%db" % depth) for v in row)
            bits += "0" * (-len(bits) % 8)
            out += b"\0" + bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
    return out


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(path, pixels, depth, colour, interlace=False, extra=b""):
    """pixels: [H, W, channels] of sample values; written by hand so every depth / colour type can be made."""
    h, w, c = pixels.shape
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            sub = pixels[y0::dy, x0::dx]
            if sub.size:
                raw += pack_rows(sub.reshape(sub.shape[0], -1), depth)
    else:
        raw = pack_rows(pixels.reshape(h, w * c), depth)
    ihdr = struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 1 if interlace else 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw)) +
                png_chunk(b"IEND", b""))


def make_cases(folder):
    """Synthetic files: (path, expected has_alpha or None when lact must refuse it)."""
    rng = np.random.default_rng(7)
    rgba = rng.integers(0, 256, (23, 37, 4), dtype=np.uint8)
    rgba[0, :5, 3] = 0
    cases = []

    def pil(name, image, alpha, **options):
        path = os.path.join(folder, name)
        image.save(path, **options)
        cases.append((path, alpha))

    base = Image.fromarray(rgba, "RGBA")
    pil("rgba.png", base, True)
    pil("rgb.png", base.convert("RGB"), False)
    pil("l.png", base.convert("L"), False)
    pil("la.png", base.convert("LA"), True)
    pil("1.png", base.convert("1"), False)
    pil("p.png", base.convert("RGB").convert("P", palette=Image.ADAPTIVE, colors=200), False)
    pil("p4.png", base.convert("RGB").convert("P", palette=Image.ADAPTIVE, colors=16), False, bits=4)
    pil("p_trns.png", base.convert("P", palette=Image.ADAPTIVE, colors=64), True, transparency=3)
    pil("pa.png", base.quantize(colors=50), True, transparency=bytes(range(0, 250, 5)))
    pil("rgb_trns.png", base.convert("RGB"), True, transparency=tuple(int(v) for v in rgba[0, 0, :3]))
    pil("l_trns.png", base.convert("L"), True, transparency=int(np.asarray(base.convert("L"))[1, 1]))
    pil("i16.png", Image.fromarray((rng.integers(0, 65536, (9, 11))).astype(np.uint16)), None)
    pil("q95_444.jpg", base.convert("RGB"), False, quality=95, subsampling=0)
    pil("q75_422.jpg", base.convert("RGB"), False, quality=75, subsampling=1)
    pil("q50_420.jpg", base.convert("RGB"), False, quality=50, subsampling=2)
    pil("progressive.jpg", base.convert("RGB"), False, quality=85, progressive=True)
    pil("optimized.jpg", base.convert("RGB"), False, quality=85, optimize=True)
    pil("grey.jpg", base.convert("L"), False, quality=90)
    pil("cmyk.jpg", base.convert("CMYK"), False, quality=90)
    big = Image.fromarray(rng.integers(0, 256, (301, 517, 3), dtype=np.uint8)).resize((1033, 601))
    pil("big_420.jpg", big, False, quality=90)

    # What PIL cannot write: 16-bit colour, low-depth grey, interlacing, grey+alpha at 16 bits.
    for name, depth, colour, interlace, channels, alpha in [
            ("rgb16.png", 16, 2, False, 3, False), ("rgba16.png", 16, 6, False, 4, True),
            ("la16.png", 16, 4, False, 2, True), ("l2.png", 2, 0, False, 1, False), ("l4.png", 4, 0, False, 1, False),
            ("rgba_adam7.png", 8, 6, True, 4, True), ("l1_adam7.png", 1, 0, True, 1, False),
            ("rgb16_adam7.png", 16, 2, True, 3, False)]:
        top = 1 << depth
        pixels = rng.integers(0, top, (23, 37, channels)).astype(np.uint16 if depth == 16 else np.uint8)
        path = os.path.join(folder, name)
        write_png(path, pixels, depth, colour, interlace)
        cases.append((path, alpha))
    return cases


def real_images(args):
    folders = [os.path.join(ROOT, "examples", "gso_toy_64"), os.path.join(args.fixture, "scene", "images")]
    if args.data:
        folders += [os.path.join(args.data, "gso_toy", "renderings"), os.path.join(args.data, "mydesk", "images")]
    files = []
    for folder in folders:
        if not os.path.isdir(folder):
            print("image_decode_parity: skipping %s (not there)" % folder)
            continue
        files += sorted(os.path.join(folder, f) for f in os.listdir(folder)
                        if f.lower().endswith((".png", ".jpg", ".jpeg")))
    return [(f, "any") for f in files]  # has_alpha: whatever the file has


def decode_all(dump, paths):
    """lact's results in order: (width, height, has_alpha, uint8 [H, W, 4]) or the error text."""
    proc = subprocess.run([dump], input="".join(p + "\n" for p in paths).encode(), stdout=subprocess.PIPE,
                          check=True)
    out, pos, results = proc.stdout, 0, []
    for _ in paths:
        end = out.index(b"\n", pos)
        line = out[pos:end].decode()
        pos = end + 1
        if line.startswith("error "):
            results.append(line[6:])
            continue
        _, w, h, a = line.split()
        w, h = int(w), int(h)
        pixels = np.frombuffer(out[pos:pos + w * h * 4], np.uint8).reshape(h, w, 4)
        pos += w * h * 4
        results.append((w, h, a == "1", pixels))
    return results


def check(cases, results):
    failures = []
    for (path, alpha), got in zip(cases, results):
        name = os.path.relpath(path)
        if alpha is None:
            if not (isinstance(got, str) and "16-bit greyscale" in got):
                failures.append("%s: expected the 16-bit greyscale refusal, got %r" % (name, got if isinstance(
                    got, str) else "pixels"))
            continue
        if isinstance(got, str):
            failures.append("%s: lact refused it: %s" % (name, got))
            continue
        with Image.open(path) as im:
            expected = np.asarray(im.convert("RGBA"))
        w, h, has_alpha, pixels = got
        if pixels.shape != expected.shape:
            failures.append("%s: size %dx%d, PIL %dx%d" % (name, w, h, expected.shape[1], expected.shape[0]))
        elif not np.array_equal(pixels, expected):
            diff = np.abs(pixels.astype(int) - expected.astype(int))
            failures.append("%s: %d samples differ from PIL's (max %d)" % (name, int((diff > 0).sum()), diff.max()))
        if alpha != "any" and has_alpha != alpha:
            failures.append("%s: has_alpha %s, expected %s" % (name, has_alpha, alpha))
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", required=True)
    parser.add_argument("--fixture", default=os.path.join(ROOT, "..", "shared", "fixtures", "lact_tiny"))
    parser.add_argument("--data", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cases = make_cases(folder) + real_images(args)
        failures = check(cases, decode_all(args.dump, [p for p, _ in cases]))
    for f in failures:
        print("FAIL", f)
    bad = len({f.split(": ")[0] for f in failures})
    print("image_decode_parity: %d files, %d decoded as PIL does" % (len(cases), len(cases) - bad))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
