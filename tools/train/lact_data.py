#!/usr/bin/env python3
"""Training data for the LaCT trainer: shard and LaCT-layout readers, view sampling.

Two sources, both turned into a list of objects, each (images uint8 [V,H,W,4] RGBA,
cameras float32 [V,20] = fx, fy, cx, cy, c2w OpenCV 4x4 row-major):

* a shard (binary, see SHARD FORMAT below; `load_shard` is the one function that knows it);
* the LaCT object layout: an index JSON (list of relative paths to opencv_cameras.json),
  a folder holding opencv_cameras.json, or that file itself (PNG decoding through PIL when
  installed, else the minimal zlib decoder in this file).

SHARD FORMAT: the one tools/render_objects writes (see its README.md), version 1:
  [0, header_bytes)  one-line JSON object, space-padded, ending in '\n' (header_bytes a multiple
                     of 4096): format "lact-render-shard", version, objects, views, height,
                     width, header_bytes, images {offset, dtype, shape, layout},
                     cameras {offset, ...}, names, plus producer keys (seed, source, ...)
  images.offset      uint8 RGBA [objects, views, H, W, 4], straight alpha, background (255,255,255,0)
  cameras.offset     float32 LE [objects, views, 20]: fx, fy, cx, cy, then c2w 4x4 row-major
                     (OpenCV axes x right, y down, z forward; world z-up)
load_shard also accepts a header without offsets (images right after the header line,
cameras right after the images).
"""
import json
import os
import struct
import zlib

import numpy as np
import torch
import torch.nn.functional as F

SHARD_FORMAT = "lact-render-shard"
SHARD_ALIGN = 4096


# ----------------------------------------------------------------------------- shards
def read_shard_header(path):
    """-> (header dict, length of the header line in bytes)."""
    with open(path, "rb") as f:
        line = f.readline(1 << 26)
    if not line.endswith(b"\n"):
        raise ValueError("%s: no JSON header line" % path)
    return json.loads(line.decode("utf-8")), len(line)


def _offset(entry, default):
    if isinstance(entry, dict) and "offset" in entry:
        return int(entry["offset"])
    return default


def load_shard(path):
    """Read a shard -> (images uint8 [O,V,H,W,4] (memory-mapped), cameras float32 [O,V,20])."""
    header, head_len = read_shard_header(path)
    fmt = header.get("format", SHARD_FORMAT)
    if "shard" not in str(fmt):
        raise ValueError("%s: unknown shard format %r" % (path, fmt))
    o, v = int(header["objects"]), int(header["views"])
    h, w = int(header["height"]), int(header["width"])
    img_off = _offset(header.get("images"), int(header.get("header_bytes", head_len)))
    img_bytes = o * v * h * w * 4
    cam_off = _offset(header.get("cameras"), img_off + img_bytes)
    size = os.path.getsize(path)
    if cam_off + o * v * 20 * 4 > size or img_off + img_bytes > size:
        raise ValueError("%s: file is shorter (%d bytes) than its header implies" % (path, size))
    if o == 0:
        return np.zeros((0, v, h, w, 4), np.uint8), np.zeros((0, v, 20), np.float32)
    images = np.memmap(path, dtype=np.uint8, mode="r", offset=img_off, shape=(o, v, h, w, 4))
    cameras = np.fromfile(path, dtype="<f4", count=o * v * 20, offset=cam_off)
    return images, cameras.astype(np.float32).reshape(o, v, 20)


def write_shard(path, images, cameras, extra=None):
    """Write a shard in the render_objects format. images uint8 [O,V,H,W,4], cameras [O,V,20]."""
    images = np.asarray(images)
    cameras = np.asarray(cameras, dtype="<f4")
    o, v, h, w, c = images.shape
    assert c == 4 and images.dtype == np.uint8, "images must be uint8 RGBA"
    assert cameras.shape == (o, v, 20), "cameras must be [O,V,20]"
    names = list((extra or {}).get("names") or ["object_%06d" % i for i in range(o)])

    def header(hb):
        hd = {"format": SHARD_FORMAT, "version": 1, "objects": o, "views": v, "height": h, "width": w,
              "header_bytes": hb,
              "images": {"offset": hb, "dtype": "uint8", "shape": [o, v, h, w, 4],
                         "layout": "RGBA, straight alpha; background pixels are (255, 255, 255, 0)"},
              "cameras": {"offset": hb + images.nbytes, "dtype": "<f4", "shape": [o, v, 20],
                          "layout": "fx, fy, cx, cy (pixels), then c2w 4x4 row-major; OpenCV camera axes "
                                    "(x right, y down, z forward), world z-up"}}
        for k, val in (extra or {}).items():
            if k != "names":
                hd[k] = val
        hd["names"] = names
        return json.dumps(hd)
    hb = SHARD_ALIGN
    while len(header(hb).encode("utf-8")) + 1 > hb:
        hb += SHARD_ALIGN
    head = header(hb).encode("utf-8")
    head = head + b" " * (hb - 1 - len(head)) + b"\n"
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        f.write(np.ascontiguousarray(images).tobytes())
        f.write(np.ascontiguousarray(cameras).tobytes())
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- PNG
def _unfilter(raw, h, rowbytes, bpp):
    out = np.zeros((h, rowbytes), dtype=np.uint8)
    prev = np.zeros(rowbytes, dtype=np.int32)
    stride = rowbytes + 1
    for y in range(h):
        ftype = raw[y * stride]
        line = np.frombuffer(raw, dtype=np.uint8, count=rowbytes, offset=y * stride + 1).astype(np.int32)
        if ftype == 0:
            cur = line
        elif ftype == 1:  # Sub: running sum per channel along x
            cur = np.cumsum(line.reshape(-1, bpp), axis=0).reshape(-1) & 255
        elif ftype == 2:  # Up
            cur = (line + prev) & 255
        elif ftype in (3, 4):  # Average / Paeth: sequential along x, vectorised over channels
            cur = np.zeros(rowbytes, dtype=np.int32)
            L = line.reshape(-1, bpp)
            P = prev.reshape(-1, bpp)
            C = cur.reshape(-1, bpp)
            left = np.zeros(bpp, dtype=np.int32)
            upleft = np.zeros(bpp, dtype=np.int32)
            for x in range(L.shape[0]):
                up = P[x]
                if ftype == 3:
                    val = (L[x] + ((left + up) >> 1)) & 255
                else:
                    p = left + up - upleft
                    pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
                    pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
                    val = (L[x] + pred) & 255
                C[x] = val
                left, upleft = val, up
        else:
            raise ValueError("bad PNG filter type %d" % ftype)
        out[y] = cur
        prev = cur
    return out


def decode_png(data):
    """Minimal PNG decoder: 8-bit, non-interlaced gray/GA/RGB/RGBA -> uint8 [H,W,4] RGBA."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if ihdr is None:
        raise ValueError("PNG without IHDR")
    w, h, depth, ctype, _, _, interlace = ihdr
    chans = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or chans is None or interlace:
        raise ValueError("PNG variant not supported by the fallback decoder "
                         "(depth %d, colour type %d, interlace %d); install PIL" % (depth, ctype, interlace))
    raw = zlib.decompress(b"".join(idat))
    px = _unfilter(raw, h, w * chans, chans).reshape(h, w, chans)
    if chans == 4:
        return px
    out = np.full((h, w, 4), 255, dtype=np.uint8)
    if chans == 3:
        out[..., :3] = px
    elif chans == 1:
        out[..., :3] = px
    else:
        out[..., :3] = px[..., :1]
        out[..., 3] = px[..., 1]
    return out


def encode_png(rgb):
    """uint8 [H,W,3] -> PNG bytes (filter 0; for previews)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w = rgb.shape[:2]
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def read_image_rgba(path):
    """Any image -> uint8 [H,W,4] RGBA (PIL if importable, else the PNG fallback)."""
    try:
        from PIL import Image
    except ImportError:
        with open(path, "rb") as f:
            return decode_png(f.read())
    with Image.open(path) as im:
        return np.asarray(im.convert("RGBA"), dtype=np.uint8).copy()


# ----------------------------------------------------------------------------- resizing
def composite_white(rgba, background=None):
    """uint8 RGBA [..., H, W, 4] -> float32 torch RGB [..., 3, H, W] in [0,1], composited onto
    white, or onto `background` (a tensor broadcastable to [..., 1, 1, 3], e.g. [B, 1, 1, 1, 3])."""
    t = torch.as_tensor(np.asarray(rgba)) if not torch.is_tensor(rgba) else rgba
    t = t.float() / 255.0
    rgb, a = t[..., :3], t[..., 3:4]
    if background is None:
        out = rgb * a + (1.0 - a)
    else:
        out = rgb * a + background.to(t) * (1.0 - a)
    return out.movedim(-1, -3).contiguous()


def resize_cover(rgb, cameras, h, w):
    """Cover-resize + centre-crop float images [N,C,H0,W0] to (h, w); intrinsics follow
    (LaCT data.py: s = max(w/W0, h/H0), fx*s, cx*s - left). cameras [N,20] torch float."""
    h0, w0 = rgb.shape[-2:]
    if (h0, w0) == (h, w):
        return rgb, cameras
    s = max(w / w0, h / h0)
    nh, nw = int(round(h0 * s)), int(round(w0 * s))
    if nh < h0 or nw < w0:
        if h0 % nh == 0 and w0 % nw == 0:
            out = F.interpolate(rgb, size=(nh, nw), mode="area")
        else:
            out = F.interpolate(rgb, size=(nh, nw), mode="bilinear", align_corners=False, antialias=True)
    else:
        out = F.interpolate(rgb, size=(nh, nw), mode="bilinear", align_corners=False)
    top, left = (nh - h) // 2, (nw - w) // 2
    out = out[..., top:top + h, left:left + w]
    cam = cameras.clone()
    cam[:, 0] *= s
    cam[:, 1] *= s
    cam[:, 2] = cam[:, 2] * s - left
    cam[:, 3] = cam[:, 3] * s - top
    return out.clamp(0, 1), cam


# ----------------------------------------------------------------------------- LaCT layout
def _lact_scene_files(path):
    """Resolve an index JSON / folder / opencv_cameras.json to a list of camera JSON paths."""
    if os.path.isdir(path):
        for name in ("index.json", "opencv_cameras.json"):
            p = os.path.join(path, name)
            if os.path.exists(p):
                return _lact_scene_files(p)
        raise ValueError("%s: no index.json or opencv_cameras.json" % path)
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, list) and data and isinstance(data[0], str):
        base = os.path.dirname(os.path.abspath(path))
        return [os.path.join(base, p) for p in data]
    if isinstance(data, dict) and isinstance(data.get("objects") or data.get("scenes"), list):
        base = os.path.dirname(os.path.abspath(path))
        return [os.path.join(base, p if isinstance(p, str) else p["cameras"])
                for p in (data.get("objects") or data.get("scenes"))]
    return [path]


def load_lact_object(cam_json, size=None):
    """One LaCT object folder -> (images uint8 [V,H,W,4], cameras float32 [V,20]).
    size=(h, w) cover-resizes at load time; colour is resampled premultiplied by alpha (so
    compositing afterwards equals LaCT's composite-after-resize) and alpha is kept."""
    with open(cam_json) as f:
        frames = json.load(f)
    if isinstance(frames, dict):
        frames = frames.get("frames", [])
    base = os.path.dirname(os.path.abspath(cam_json))
    imgs, cams = [], []
    for fr in frames:
        w2c = np.asarray(fr["w2c"], dtype=np.float64).reshape(4, 4)
        c2w = np.linalg.inv(w2c)
        cams.append(np.concatenate([[fr["fx"], fr["fy"], fr["cx"], fr["cy"]], c2w.reshape(-1)]))
        im = read_image_rgba(os.path.join(base, fr["file_path"]))
        if (im.shape[0], im.shape[1]) != (int(fr["h"]), int(fr["w"])):
            raise ValueError("%s: image %s is %dx%d, JSON says %dx%d" % (
                cam_json, fr["file_path"], im.shape[0], im.shape[1], fr["h"], fr["w"]))
        imgs.append(im)
    cams = np.asarray(cams, dtype=np.float32)
    if size is not None and tuple(size) != imgs[0].shape[:2]:
        out_i, out_c = [], []
        for im, cam in zip(imgs, cams):
            t = torch.from_numpy(im).float().div(255.0)
            alpha = t[..., 3:4]
            prem = torch.cat([t[..., :3] * alpha, alpha], -1).permute(2, 0, 1)[None]  # [1,4,H,W]
            r, c = resize_cover(prem, torch.from_numpy(cam)[None], *size)
            r = r[0].permute(1, 2, 0)
            a_out = r[..., 3:4]
            rgb = torch.where(a_out > 1e-6, r[..., :3] / a_out.clamp_min(1e-6), torch.ones_like(r[..., :3]))
            rgba = torch.cat([rgb.clamp(0, 1), a_out], -1)
            out_i.append((rgba * 255 + 0.5).clamp(0, 255).to(torch.uint8).numpy())
            out_c.append(c[0].numpy())
        return np.stack(out_i), np.stack(out_c).astype(np.float32)
    return np.stack(imgs), cams


# ----------------------------------------------------------------------------- dataset
class ObjectSet:
    """A list of objects: images[i] uint8 [V_i,H,W,4] (maybe memory-mapped), cameras[i] [V_i,20]."""

    def __init__(self):
        self.images, self.cameras, self.names, self.sources = [], [], [], []

    def __len__(self):
        return len(self.images)

    def add(self, images, cameras, name, source):
        self.images.append(images)
        self.cameras.append(np.asarray(cameras, dtype=np.float32))
        self.names.append(name)
        self.sources.append(source)

    def subset(self, idx):
        s = ObjectSet()
        for i in idx:
            s.add(self.images[i], self.cameras[i], self.names[i], self.sources[i])
        return s

    def describe(self):
        if not self.images:
            return "0 objects"
        v = sorted({im.shape[0] for im in self.images})
        hw = sorted({"%dx%d" % im.shape[1:3] for im in self.images})
        return "%d objects, views %s, size %s, from %s" % (
            len(self), "/".join(map(str, v)), ",".join(hw), ",".join(sorted(set(self.sources))))


def is_shard(path):
    """A shard starts with a one-line JSON object holding objects/views/height/width."""
    if os.path.isdir(path) or path.endswith(".json"):
        return False
    try:
        head, _ = read_shard_header(path)
    except (ValueError, UnicodeDecodeError, OSError):
        return False
    return isinstance(head, dict) and all(k in head for k in ("objects", "views", "height", "width"))


def load_objects(paths, size=None):
    """Load shards and/or LaCT layouts (a list of paths) into one ObjectSet.
    size=(h,w): LaCT layouts are resized at load time; shards are resized per sample."""
    objs = ObjectSet()
    for path in paths:
        if is_shard(path):
            images, cameras = load_shard(path)
            header, _ = read_shard_header(path)
            names = header.get("names") or ["%s:%d" % (os.path.basename(path), i) for i in range(len(images))]
            for i in range(images.shape[0]):
                objs.add(images[i], cameras[i], names[i], os.path.basename(path))
        else:
            for cam_json in _lact_scene_files(path):
                im, cam = load_lact_object(cam_json, size)
                objs.add(im, cam, os.path.basename(os.path.dirname(os.path.abspath(cam_json))), os.path.basename(path))
    return objs


def fixed_splits(objs, n_input, n_target, seed=1234):
    """Deterministic per-object view splits for validation (independent of the training RNG)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(len(objs)):
        nv = objs.images[i].shape[0]
        out.append(rng.permutation(nv)[:min(nv, n_input + n_target)])
    return out
