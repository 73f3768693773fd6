#!/usr/bin/env python3
"""Makes the shipped example scene: a LaCT-layout copy of a scene downscaled by an integer factor.

RGBA is averaged over factor x factor blocks with premultiplied alpha (exact box filter), intrinsics are
scaled (fx, fy, cx, cy divided by the factor), poses kept. Writes DIR/opencv_cameras.json and DIR/NNN.png.

  /usr/bin/python3 -m tools.make_example_scene ../shared/data/gso_toy examples/gso_toy_64 --factor 8
"""
import argparse
import json
import os
import struct
import zlib

import numpy as np

from tools.train.lact_data import read_image_rgba


def encode_png_rgba(rgba):
    h, w, _ = rgba.shape
    raw = b"".join(b"\x00" + rgba[y].tobytes() for y in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene", help="folder holding opencv_cameras.json")
    ap.add_argument("out")
    ap.add_argument("--factor", type=int, default=8)
    a = ap.parse_args()
    frames = json.load(open(os.path.join(a.scene, "opencv_cameras.json")))
    os.makedirs(a.out, exist_ok=True)
    out_frames = []
    for i, f in enumerate(frames):
        rgba = read_image_rgba(os.path.join(a.scene, f["file_path"])).astype(np.float64) / 255.0
        h, w = rgba.shape[0] // a.factor, rgba.shape[1] // a.factor
        blocks = rgba[:h * a.factor, :w * a.factor].reshape(h, a.factor, w, a.factor, 4)
        alpha = blocks[..., 3].mean(axis=(1, 3))
        colour = (blocks[..., :3] * blocks[..., 3:4]).mean(axis=(1, 3)) / np.maximum(alpha, 1e-8)[..., None]
        colour[alpha <= 1e-8] = 1.0  # fully transparent: white, as the source's background
        small = np.concatenate([colour, alpha[..., None]], axis=-1)
        name = "%03d.png" % i
        with open(os.path.join(a.out, name), "wb") as fh:
            fh.write(encode_png_rgba(np.clip(np.round(small * 255), 0, 255).astype(np.uint8)))
        out_frames.append({"w": w, "h": h, "fx": f["fx"] / a.factor, "fy": f["fy"] / a.factor,
                           "cx": f["cx"] / a.factor, "cy": f["cy"] / a.factor, "w2c": f["w2c"], "file_path": name})
    with open(os.path.join(a.out, "opencv_cameras.json"), "w") as fh:
        json.dump(out_frames, fh, indent=1)
    print("wrote %d views at %dx%d to %s" % (len(out_frames), out_frames[0]["w"], out_frames[0]["h"], a.out))


if __name__ == "__main__":
    main()
