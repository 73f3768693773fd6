#!/usr/bin/env python3
"""Procedural training objects for the LaCT trainer, written as a shard (see lact_data.py).

Each object is 1-4 primitives (ellipsoids and oriented boxes, solid, checkered or striped,
two colours) scaled into a ball of radius 0.8-1.2, ray-cast analytically (2x2 supersampling, so edges get
partial alpha) with two fixed world-space directional lights plus ambient light. Cameras
follow the GSO/LaCT object convention: radius 2.7, looking at the origin, z-up world,
horizontal FoV 50 deg, OpenCV axes (x right, y down, z forward), cx = W/2, cy = H/2;
'random' views as render_objects' random:N (azimuth uniform, sin(elevation) uniform over
[-10, 70] deg), 'grid' views GSO-like (elevations 0/20/40/60, azimuths evenly spaced).
The shard format is render_objects' (tools/render_objects/README.md; lact_data.py).
Background: alpha 0 with RGB 255 (white), like the GSO renderings.

Object i depends only on (--seed, i), so shards are reproducible and a chunked or GPU run
gives the same scenes (pixels can differ in the last bit between CPU and GPU).

usage: python3 -m tools.train.synthetic_data --out train.shard --objects 256 --views 32 --size 64
       [--seed 1] [--layout random|grid] [--device cpu|cuda]
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch

from tools.train import lact_data

MAX_PRIMS = 4
HFOV_DEG = 50.0
RADIUS = 2.7
LIGHTS = ((np.array([0.4, 0.3, 0.85]), 0.65), (np.array([-0.6, -0.5, 0.25]), 0.3))
AMBIENT = 0.3


def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def random_scene(seed, index):
    """Primitive table for one object (numpy, float64)."""
    rng = np.random.default_rng([seed, index, 7])
    n = int(rng.integers(1, MAX_PRIMS + 1))
    kind = np.zeros(MAX_PRIMS, np.int64)            # 0 none, 1 ellipsoid, 2 box
    ainv = np.tile(np.eye(3), (MAX_PRIMS, 1, 1))    # world -> local (unit sphere / cube)
    centre = np.zeros((MAX_PRIMS, 3))
    col = np.zeros((MAX_PRIMS, 2, 3))
    pattern = np.zeros(MAX_PRIMS, np.int64)         # 0 solid, 1 checker, 2 stripes
    freq = np.ones(MAX_PRIMS)
    extent = np.zeros(MAX_PRIMS)
    for p in range(n):
        kind[p] = 1 + int(rng.random() < 0.5)
        scale = rng.uniform(0.2, 0.55, size=3) * (0.75 if kind[p] == 2 else 1.0)
        if rng.random() < 0.3:
            scale[:] = scale[0]
        rot = random_rotation(rng)
        a = rot @ np.diag(scale)
        ainv[p] = np.linalg.inv(a)
        r = 0.9 - np.linalg.norm(scale)
        c = rng.normal(size=3)
        c *= max(r, 0.0) * rng.uniform(0.0, 1.0) ** (1 / 3) / (np.linalg.norm(c) + 1e-9)
        centre[p] = c
        col[p, 0] = rng.uniform(0.05, 0.95, size=3)
        col[p, 1] = rng.uniform(0.05, 0.95, size=3) if rng.random() < 0.7 else 1 - col[p, 0]
        pattern[p] = int(rng.choice(3, p=[0.4, 0.35, 0.25]))
        freq[p] = rng.uniform(1.5, 4.0)
        extent[p] = np.linalg.norm(c) + scale.max() * (math.sqrt(3) if kind[p] == 2 else 1.0)
    # normalise: the object's bounding ball gets a radius in [0.8, 1.2] (the frame's half
    # width at the origin is 2.7 * tan(25 deg) = 1.26; render_objects fits the cube [-1,1]^3)
    f = rng.uniform(0.8, 1.2) / extent[:n].max()
    centre *= f
    ainv[:n] /= f
    return kind, ainv, centre, col, pattern, freq


def look_at_c2w(pos):
    up = np.array([0.0, 0.0, 1.0])
    fwd = -pos / np.linalg.norm(pos)
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    down = np.cross(fwd, right)
    c2w = np.eye(4)
    c2w[:3, 0], c2w[:3, 1], c2w[:3, 2], c2w[:3, 3] = right, down, fwd, pos
    return c2w


def object_cameras(seed, index, views, h, w, layout):
    """[V,20] float64: fx, fy, cx, cy, c2w row-major."""
    rng = np.random.default_rng([seed, index, 11])
    fx = 0.5 * w / math.tan(math.radians(HFOV_DEG) / 2)
    if layout == "grid":  # GSO style: elevations 0/20/40/60, azimuths evenly spaced
        per = max(1, views // 4)
        off = rng.uniform(0, 2 * math.pi)
        elev = np.repeat(np.radians([0, 20, 40, 60]), per)[:views]
        azim = (off + np.tile(np.arange(per) * 2 * math.pi / per, 4))[:views]
        if len(elev) < views:
            extra = views - len(elev)
            elev = np.concatenate([elev, np.radians(rng.uniform(-10, 70, extra))])
            azim = np.concatenate([azim, rng.uniform(0, 2 * math.pi, extra)])
    else:
        # as render_objects' random:N: sin(elevation) uniform, elevation in [-10, 70] deg
        elev = np.arcsin(rng.uniform(math.sin(math.radians(-10)), math.sin(math.radians(70)), views))
        azim = rng.uniform(0, 2 * math.pi, views)
    out = np.zeros((views, 20))
    for v in range(views):
        pos = RADIUS * np.array([math.cos(elev[v]) * math.cos(azim[v]),
                                 math.cos(elev[v]) * math.sin(azim[v]), math.sin(elev[v])])
        out[v, :4] = (fx, fx, 0.5 * w, 0.5 * h)
        out[v, 4:] = look_at_c2w(pos).reshape(-1)
    return out


def render_chunk(scenes, cams, h, w, ss, device):
    """scenes: list of random_scene tuples, cams [O,V,20] -> uint8 RGBA [O,V,h,w,4]."""
    dt = torch.float32
    dev = torch.device(device)
    o_n, v_n = cams.shape[:2]
    cams_t = torch.as_tensor(cams, dtype=dt, device=dev)
    fx, fy, cx, cy = [cams_t[..., i, None] for i in range(4)]
    c2w = cams_t[..., 4:].reshape(o_n, v_n, 4, 4)
    sub = (torch.arange(ss, dtype=dt, device=dev) + 0.5) / ss
    ys = (torch.arange(h, dtype=dt, device=dev)[:, None] + sub[None, :]).reshape(-1)  # h*ss
    xs = (torch.arange(w, dtype=dt, device=dev)[:, None] + sub[None, :]).reshape(-1)  # w*ss
    yy, xx = torch.meshgrid(ys, xs, indexing="ij")
    yy, xx = yy.reshape(-1), xx.reshape(-1)                                           # N
    dcam = torch.stack([(xx - cx) / fx, (yy - cy) / fy, torch.ones_like(xx).expand_as(xx - cx)], -1)
    d = torch.einsum("ovij,ovnj->ovni", c2w[..., :3, :3], dcam)
    d = d / d.norm(dim=-1, keepdim=True)                                              # [O,V,N,3]
    org = c2w[..., :3, 3]                                                             # [O,V,3]

    def stack(i):
        return torch.as_tensor(np.stack([s[i] for s in scenes]), device=dev)
    kind, ainv, centre, col, pattern, freq = [stack(i) for i in range(6)]
    ainv, centre, col, freq = ainv.to(dt), centre.to(dt), col.to(dt), freq.to(dt)

    n_rays = d.shape[2]
    best_t = torch.full((o_n, v_n, n_rays), float("inf"), dtype=dt, device=dev)
    colour = torch.ones((o_n, v_n, n_rays, 3), dtype=dt, device=dev)
    lights = [(torch.as_tensor(l / np.linalg.norm(l), dtype=dt, device=dev), s) for l, s in LIGHTS]
    for p in range(MAX_PRIMS):
        k = kind[:, p]
        if not bool((k > 0).any()):
            continue
        m = ainv[:, p]                                                   # [O,3,3]
        ol = torch.einsum("oij,ovj->ovi", m, org - centre[:, p, None])   # [O,V,3]
        dl = torch.einsum("oij,ovnj->ovni", m, d)                        # [O,V,N,3]
        ol_b = ol[:, :, None, :]
        # ellipsoid (unit sphere in local coordinates)
        a = (dl * dl).sum(-1)
        b = 2 * (ol_b * dl).sum(-1)
        c = (ol_b * ol_b).sum(-1) - 1
        disc = b * b - 4 * a * c
        t_s = (-b - disc.clamp_min(0).sqrt()) / (2 * a)
        hit_s = (disc > 0) & (t_s > 0)
        # box (unit cube [-1,1]^3 in local coordinates)
        dl_safe = torch.where(dl.abs() < 1e-9, torch.full_like(dl, 1e-9), dl)
        inv = 1.0 / dl_safe
        t1 = (-1 - ol_b) * inv
        t2 = (1 - ol_b) * inv
        tn, tf = torch.minimum(t1, t2), torch.maximum(t1, t2)
        t_near, axis = tn.max(-1)
        t_far = tf.min(-1).values
        hit_b = (t_near < t_far) & (t_near > 0)
        is_s = (k == 1)[:, None, None]
        is_b = (k == 2)[:, None, None]
        t_hit = torch.where(is_s, t_s, t_near)
        hit = torch.where(is_s, hit_s, hit_b & is_b)
        closer = hit & (t_hit < best_t)
        if not bool(closer.any()):
            continue
        pl = ol_b + t_hit[..., None] * dl                                 # local hit point
        n_box = -torch.sign(torch.gather(dl, -1, axis[..., None])) * \
            torch.nn.functional.one_hot(axis, 3).to(dt)
        nl = torch.where(is_s[..., None], pl, n_box)
        nw = torch.einsum("oji,ovnj->ovni", m, nl)                         # A^-T n
        nw = nw / (nw.norm(dim=-1, keepdim=True) + 1e-12)
        nw = torch.where(((nw * d).sum(-1, keepdim=True) > 0), -nw, nw)
        f = freq[:, p, None, None, None]
        cells = torch.floor(pl * f)
        checker = cells.sum(-1).remainder(2)
        stripes = cells[..., 2].remainder(2)
        pat = pattern[:, p, None, None]
        sel = torch.where(pat == 1, checker, torch.where(pat == 2, stripes, torch.zeros_like(checker)))
        base = torch.where(sel[..., None] > 0.5, col[:, p, 1, None, None, :], col[:, p, 0, None, None, :])
        shade = torch.full_like(t_hit, AMBIENT)
        for ldir, strength in lights:
            shade = shade + strength * (nw @ ldir).clamp_min(0)
        rgb = (base * shade[..., None]).clamp(0, 1)
        best_t = torch.where(closer, t_hit, best_t)
        colour = torch.where(closer[..., None], rgb, colour)
    alpha = torch.isfinite(best_t).to(dt)
    alpha = alpha.reshape(o_n, v_n, h, ss, w, ss).mean(dim=(3, 5))
    prem = (colour * torch.isfinite(best_t).to(dt)[..., None]).reshape(o_n, v_n, h, ss, w, ss, 3).mean(dim=(3, 5))
    rgb = torch.where(alpha[..., None] > 0, prem / alpha.clamp_min(1e-6)[..., None], torch.ones_like(prem))
    rgba = torch.cat([rgb.clamp(0, 1), alpha[..., None]], -1)
    return (rgba * 255 + 0.5).floor().clamp(0, 255).to(torch.uint8).cpu().numpy()


def generate(seed, objects, views, size, layout="random", ss=2, device="cpu", chunk=None, start=0,
             log=None):
    """-> (images uint8 [O,V,H,W,4], cameras float32 [O,V,20])."""
    h = w = size
    if chunk is None:
        budget = (64 << 20) if str(device).startswith("cuda") else (2 << 20)
        chunk = max(1, budget // (views * h * w * ss * ss))
    images = np.zeros((objects, views, h, w, 4), np.uint8)
    cameras = np.zeros((objects, views, 20), np.float32)
    t0 = time.time()
    for s in range(0, objects, chunk):
        e = min(objects, s + chunk)
        idx = range(start + s, start + e)
        scenes = [random_scene(seed, i) for i in idx]
        cams = np.stack([object_cameras(seed, i, views, h, w, layout) for i in idx])
        images[s:e] = render_chunk(scenes, cams, h, w, ss, device)
        cameras[s:e] = cams.astype(np.float32)
        if log and (e == objects or (s // chunk) % 16 == 0):
            log("synthetic: %d/%d objects (%.1f s)" % (e, objects, time.time() - t0))
    return images, cameras


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output shard path")
    ap.add_argument("--objects", type=int, default=256)
    ap.add_argument("--views", type=int, default=32)
    ap.add_argument("--size", type=int, default=64, help="image height = width (pixels)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="index of the first object (for disjoint sets)")
    ap.add_argument("--layout", choices=("random", "grid"), default="random")
    ap.add_argument("--supersample", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--preview", help="write a PNG contact sheet of the first objects here")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("synthetic_data: CUDA not available, using the CPU", file=sys.stderr)
        a.device = "cpu"
    t0 = time.time()
    images, cameras = generate(a.seed, a.objects, a.views, a.size, a.layout, a.supersample, a.device,
                               start=a.start, log=lambda s: print(s, flush=True))
    names = ["synthetic_s%d_%06d" % (a.seed, a.start + i) for i in range(a.objects)]
    lact_data.write_shard(a.out, images, cameras, {
        "source": "tools/train/synthetic_data.py", "seed": a.seed, "start": a.start,
        "layout": a.layout, "hfov_deg": HFOV_DEG, "radius": RADIUS, "names": names})
    if a.preview:
        n = min(8, a.objects)
        v = min(8, a.views)
        rgb = lact_data.composite_white(images[:n, :v]).permute(0, 3, 1, 4, 2)  # [n,H,v,W,3]
        sheet = (rgb.reshape(n * a.size, v * a.size, 3) * 255 + 0.5).clamp(0, 255).byte().numpy()
        with open(a.preview, "wb") as f:
            f.write(lact_data.encode_png(sheet))
    print("wrote %s: %d objects x %d views at %dx%d (%.1f MB, %.1f s, %s)" % (
        a.out, a.objects, a.views, a.size, a.size, os.path.getsize(a.out) / 2**20, time.time() - t0, a.device))


if __name__ == "__main__":
    main()
