#!/usr/bin/env python3
"""Grow a LaCT model deeper without changing what it computes: the starting point of a capacity test.

usage: python3 tools/train/grow_depth.py MODEL.safetensors --layers N -o GROWN.safetensors

Every block is pre-norm residual (x + c_proj(f(ln x)) per unit), so a block whose output projections
(`c_proj`) are all zero is the identity. The grown model keeps the old blocks in order and puts each new one
right after the block it copies (4 -> 6 layers: 0 0' 1 2 2' 3), with that copy's `c_proj` weights zeroed:
it renders exactly what the old model renders, and training starts from there with the copies' features in
place (only their projections must learn to be non-zero). Each TTT unit adds one fast-weight state.

Before writing, the command runs both models (the reference, fp32) on a random scene and fails unless the
renders agree within --tol.
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reference"))
import safetensors_io  # noqa: E402
from lact_reference import LaCTModel  # noqa: E402
from make_case import random_cameras, random_images  # noqa: E402


def source_blocks(old_layers, new_layers):
    """Block i of the grown model copies old block source[i]; the first of a run is the original."""
    if new_layers < old_layers:
        raise ValueError("--layers %d is fewer than the model's %d" % (new_layers, old_layers))
    return [i * old_layers // new_layers for i in range(new_layers)]


def grow(tensors, old_layers, new_layers):
    """-> the grown state dict; copies have every c_proj weight zeroed."""
    src = source_blocks(old_layers, new_layers)
    out, blocks = {}, [{} for _ in range(old_layers)]
    for key, value in tensors.items():
        if key.startswith("blocks."):
            _, b, rest = key.split(".", 2)
            blocks[int(b)][rest] = value
        else:
            out[key] = value.clone()
    for i, s in enumerate(src):
        is_copy = i > 0 and src[i - 1] == s
        for rest, value in blocks[s].items():
            zero = is_copy and rest.endswith("c_proj.weight")
            out["blocks.%d.%s" % (i, rest)] = torch.zeros_like(value) if zero else value.clone()
    return out


def max_render_difference(config_a, tensors_a, config_b, tensors_b, seed=0):
    models = []
    for config, tensors in ((config_a, tensors_a), (config_b, tensors_b)):
        m = LaCTModel(config)
        m.load_state_dict(tensors, strict=True)
        models.append(m.eval())
    gen, size, n_in = torch.Generator().manual_seed(seed), 4 * int(config_a["patch_size"]), 4
    intr, c2w = (t.float()[None] for t in random_cameras(n_in + 2, size, size, gen))
    images = random_images(n_in, size, size, gen).float()[None]
    with torch.no_grad():
        a, b = (m(images, intr[:, :n_in], c2w[:, :n_in], intr[:, n_in:], c2w[:, n_in:]) for m in models)
    return float((a - b).abs().max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--layers", type=int, required=True, help="layers of the grown model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--tol", type=float, default=1e-6, help="max abs render difference allowed")
    a = ap.parse_args(argv)
    try:
        tensors, meta = safetensors_io.load(a.model)
        config = json.loads(meta["config"])
    except (OSError, ValueError, KeyError) as e:
        sys.exit("%s: cannot read the model: %s" % (a.model, e))
    old_layers = int(config["layers"])
    try:
        grown = grow(tensors, old_layers, a.layers)
    except ValueError as e:
        sys.exit("%s: %s" % (a.model, e))
    new_config = dict(config, layers=a.layers)
    diff = max_render_difference(config, tensors, new_config, grown)
    print("grown %d -> %d layers (blocks from %s); params %d -> %d; max render difference %.3g"
          % (old_layers, a.layers, source_blocks(old_layers, a.layers),
             sum(t.numel() for t in tensors.values()), sum(t.numel() for t in grown.values()), diff))
    if not diff <= a.tol:
        sys.exit("%s: the grown model renders differently (%.3g > %.3g)" % (a.model, diff, a.tol))
    new_meta = dict(meta, config=json.dumps(new_config))
    new_meta["grown_from"] = "%s (%d layers; tools/train/grow_depth.py --layers %d)" % (
        os.path.basename(a.model), old_layers, a.layers)
    safetensors_io.save(a.output, grown, new_meta)


if __name__ == "__main__":
    main()
