#!/usr/bin/env python3
"""Generate a parity case (random weights, cameras, images) for any LaCT NVS config.

Writes DIR/model.safetensors (official keys, fp32, metadata {'config': json}) and
DIR/expected.safetensors with the same tensor names/layouts as the lact_tiny fixture
(inputs, encode_* intermediates, target_render_rendering, target_render_forward).
Weights and inputs are rounded to fp32 first; everything is then computed in float64
from those exact fp32 values, so the case is exact for an fp32 engine.

usage: /usr/bin/python3 -m tools.reference.make_case --out DIR [--dim 96 --layers 2 ...]
"""
import argparse
import json
import math
import os
import time

import torch

from tools.reference import safetensors_io
from tools.reference.lact_reference import LaCTModel, with_variant


def build_config(a):
    if a.full_attention:  # the paper's baseline: the TTT layer replaced by global attention
        middle = {"type": "lact.GlobalAttention", "length_dim": "vl",
                  "params": {"head_dim": a.attn_head_dim, "use_qk_norm": True}}
    else:
        middle = {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl",
                  "params": {"head_dim": a.ttt_head_dim, "inter_multi": a.ttt_inter_multi,
                             "base_lr": a.base_lr, "muon_update_steps": a.muon_steps}}
    modules = {
        "attn": {"type": "model.SelfAttention", "length_dim": "l",
                 "params": {"head_dim": a.attn_head_dim, "use_qk_norm": not a.no_qk_norm}},
        "ttt": middle,
        "mlp": {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": a.mlp_inter_multi}},
    }
    config = {
        "patch_size": a.patch_size,
        "dim": a.dim,
        "layers": a.layers,
        "block_config": [modules[name] for name in a.order.split(",")],
    }
    return with_variant(config, a.variant) if a.variant else config


def randomise_weights(model, gen):
    """Fixture-like random weights: every parameter visibly matters."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if p.dim() == 1 and leaf == "weight":          # LayerNorm / RMSNorm weights
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("lr_fc.bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif leaf in ("w0", "w2"):                     # [H, D, d_h]
                p.copy_(torch.randn(p.shape, generator=gen) * math.sqrt(2.0 / p.shape[1]))
            elif leaf == "w1":                             # [H, d_h, D]
                p.copy_(torch.randn(p.shape, generator=gen) * math.sqrt(1.0 / p.shape[2]))
            elif name.endswith("c_proj.weight"):           # scaled up so residual branches matter
                p.copy_(0.08 * torch.randn(p.shape, generator=gen))
            else:                                          # other Linear weights
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))


def look_at_c2w(pos, target, up):
    """OpenCV camera-to-world (x right, y down, z forward) looking from pos to target."""
    fwd = target - pos
    fwd = fwd / fwd.norm()
    right = torch.cross(fwd, up, dim=0)
    right = right / right.norm()
    down = torch.cross(fwd, right, dim=0)
    c2w = torch.eye(4, dtype=torch.float64)
    c2w[:3, 0], c2w[:3, 1], c2w[:3, 2], c2w[:3, 3] = right, down, fwd, pos
    return c2w


def random_cameras(n, h, w, gen):
    """Cameras on a sphere of radius 2-3 (z-up world) looking near the origin."""
    def u(lo, hi):
        return lo + (hi - lo) * torch.rand((), generator=gen, dtype=torch.float64)
    up = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    intr, c2ws = [], []
    for _ in range(n):
        radius, azim, elev = u(2.0, 3.0), u(0.0, 2 * math.pi), u(-0.3, 1.1)
        pos = radius * torch.stack([torch.cos(elev) * torch.cos(azim),
                                    torch.cos(elev) * torch.sin(azim), torch.sin(elev)])
        target = 0.15 * torch.randn(3, generator=gen, dtype=torch.float64)
        c2ws.append(look_at_c2w(pos, target, up))
        focal = 0.5 * w / math.tan(math.radians(float(u(40.0, 60.0))) / 2)
        fx, fy = focal * u(0.9, 1.1), focal * u(0.9, 1.1)
        cx, cy = 0.5 * w + u(-0.1, 0.1) * w, 0.5 * h + u(-0.1, 0.1) * h
        intr.append(torch.stack([fx, fy, cx, cy]))
    return torch.stack(intr), torch.stack(c2ws)


def random_images(n, h, w, gen):
    """Smooth-ish random RGB images in [0, 1]: upsampled coarse noise plus a bit of detail."""
    coarse = torch.rand(n, 3, max(2, h // 8), max(2, w // 8), generator=gen, dtype=torch.float64)
    img = torch.nn.functional.interpolate(coarse, size=(h, w), mode="bilinear", align_corners=False)
    img = img + 0.1 * torch.randn(n, 3, h, w, generator=gen, dtype=torch.float64)
    return img.clamp(0, 1)


def f32(t):
    """Round to fp32 and back to float64."""
    return t.to(torch.float32).to(torch.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patch-size", type=int, default=8)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--attn-head-dim", type=int, default=32)
    ap.add_argument("--ttt-head-dim", type=int, default=96)
    ap.add_argument("--ttt-inter-multi", type=float, default=2)
    ap.add_argument("--mlp-inter-multi", type=float, default=4)
    ap.add_argument("--base-lr", type=float, default=0.01)
    ap.add_argument("--muon-steps", type=int, default=5, help="the TTT layer's muon_update_steps")
    ap.add_argument("--no-qk-norm", action="store_true", help="window attention without QK RMSNorm")
    ap.add_argument("--order", default="attn,ttt,mlp",
                    help="a block's modules, in order: attn, ttt (or the global attention), mlp; each at most once")
    ap.add_argument("--views-in", type=int, default=3)
    ap.add_argument("--views-out", type=int, default=2)
    ap.add_argument("--height", type=int, default=32)
    ap.add_argument("--width", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full-attention", action="store_true",
                    help="the full-attention baseline (lact.GlobalAttention) instead of the TTT layer")
    ap.add_argument("--variant", default="",
                    help="TTT variant: a preset (baseline, v1..v4, v6) or the authors' ttt_loss_type")
    ap.add_argument("--out", required=True, help="output directory")
    a = ap.parse_args()
    for v in ("ttt_inter_multi", "mlp_inter_multi"):
        if float(getattr(a, v)).is_integer():
            setattr(a, v, int(getattr(a, v)))
    if a.height % a.patch_size or a.width % a.patch_size:
        ap.error("--height and --width must be multiples of --patch-size")
    order = a.order.split(",")
    if not order or any(m not in ("attn", "ttt", "mlp") for m in order) or len(set(order)) != len(order):
        ap.error("--order lists attn, ttt and mlp, each at most once")
    if a.dim % a.attn_head_dim or a.dim % a.ttt_head_dim:
        ap.error("--dim must be a multiple of --attn-head-dim and --ttt-head-dim")

    t0 = time.time()
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    config = build_config(a)
    model = LaCTModel(config)  # fp32 parameters
    randomise_weights(model, gen)
    state32 = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model = model.double()  # exact fp32 values, float64 compute

    vi, vt, h, w = a.views_in, a.views_out, a.height, a.width
    intr, c2w = random_cameras(vi + vt, h, w, gen)
    inp = {
        "input_images": f32(random_images(vi, h, w, gen)),
        "input_fxfycxcy": f32(intr[:vi]), "input_c2w": f32(c2w[:vi]),
        "target_fxfycxcy": f32(intr[vi:]), "target_c2w": f32(c2w[vi:]),
    }
    b1 = {k: v.unsqueeze(0) for k, v in inp.items()}
    with torch.no_grad():
        trace = {}
        states = model.encode(b1["input_images"], b1["input_fxfycxcy"], b1["input_c2w"], trace=trace)
        rend = model.render(states, b1["target_fxfycxcy"], b1["target_c2w"], h, w)[0]
        fwd = model(**b1)[0]

    expected = dict(inp)
    expected.update(trace)
    expected["target_render_rendering"] = rend
    expected["target_render_forward"] = fwd
    os.makedirs(a.out, exist_ok=True)
    safetensors_io.save(os.path.join(a.out, "model.safetensors"), state32,
                        {"config": json.dumps(config), "format": "official LaCT NVS state_dict, fp32",
                         "source": "make_case.py seed=%d" % a.seed})
    safetensors_io.save(os.path.join(a.out, "expected.safetensors"), expected,
                        {"views_in": str(vi), "views_out": str(vt), "h": str(h), "w": str(w)})
    print("wrote %s (config %s; %.2f s; forward vs rendering max diff %.2e)" % (
        a.out, json.dumps(config), time.time() - t0, (fwd - rend).abs().max().item()))


if __name__ == "__main__":
    main()
