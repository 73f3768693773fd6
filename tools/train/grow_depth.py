#!/usr/bin/env python3
"""Grow a LaCT model deeper without changing what it computes: the starting point of a capacity test.

usage: python3 -m tools.train.grow_depth MODEL.safetensors --layers N -o GROWN.safetensors

Every block is pre-norm residual (x + c_proj(f(ln x)) per unit), so a block whose output projections
(`c_proj`) are all zero is the identity. The grown model keeps the old blocks in order and puts each new one
right after the block it copies (4 -> 6 layers: 0 0' 1 2 2' 3), with that copy's `c_proj` weights zeroed:
it renders exactly what the old model renders, and training starts from there with the copies' features in
place (only their projections must learn to be non-zero). Each TTT unit adds one fast-weight state.

Before writing, the command runs both models (the reference, fp32) on a random scene and fails unless the
renders agree within --tol.
"""
import argparse
import os
import sys

import torch

from tools.train.growing import load_model, save_if_same


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--layers", type=int, required=True, help="layers of the grown model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--tol", type=float, default=1e-6, help="max abs render difference allowed")
    a = ap.parse_args(argv)
    tensors, meta, config = load_model(a.model)
    old_layers = int(config["layers"])
    try:
        grown = grow(tensors, old_layers, a.layers)
    except ValueError as e:
        sys.exit("%s: %s" % (a.model, e))
    what = "grown %d -> %d layers (blocks from %s)" % (old_layers, a.layers, source_blocks(old_layers, a.layers))
    grown_from = "%s (%d layers; tools/train/grow_depth.py --layers %d)" % (
        os.path.basename(a.model), old_layers, a.layers)
    save_if_same(a.model, a.output, (tensors, meta, config), (grown, meta, dict(config, layers=a.layers)), what,
                 grown_from, a.tol)


if __name__ == "__main__":
    main()
