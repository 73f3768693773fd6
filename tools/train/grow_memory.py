#!/usr/bin/env python3
"""Grow a V2 LaCT model's fast-weight memory (the TTT hidden size) without changing what it computes.

usage: python3 -m tools.train.grow_memory MODEL.safetensors --inter-multi M -o GROWN.safetensors

A V2 unit (ttt_loss_type only_w1_no_wn) keeps W1 [hidden, d] as its per-scene state and reads it with the key
and query features phi(x) = silu(x W0) * (x W2). The grown unit has hidden = head_dim * M: W0 and W1 get new
random columns and rows (the module's own initialisation), W2 gets new columns of zeros. Zero W2 columns make
the new features zero, so the update W1 + NS(phi(K)^T diag(eta) V) adds zero rows (Newton-Schulz keeps zero
rows zero) and the read phi(q) W1 ignores the new rows: the grown model renders exactly what the old one did.
The new W1 rows are not zero, so the new W2 columns get gradients and the memory can learn to use them.

Other variants cannot grow this way: the straight-qk ones are fixed at inter_multi 1, and with weight norm
(V1, the baseline) the only exact growth also zeroes the new W1 rows, where every new parameter's gradient is 0.

Before writing, the command runs both models (the reference, fp32) on a random scene and fails unless the
renders agree within --tol.
"""
import argparse
import copy
import math
import os
import sys

import torch

from tools.reference.lact_reference import TTT_TYPES, VARIANT_PRESETS
from tools.train.growing import load_model, save_if_same


def ttt_params(config):
    """-> the params dict of the config's TTT unit (the same for every block), or ValueError."""
    specs = [s for s in config["block_config"] if s["type"] in TTT_TYPES]
    if len(specs) != 1:
        raise ValueError("expected one TTT unit per block, found %d" % len(specs))
    params = specs[0]["params"]
    if params.get("ttt_loss_type") != VARIANT_PRESETS["v2"]:
        raise ValueError("only V2 (%s) grows exactly; this model's TTT is %r"
                         % (VARIANT_PRESETS["v2"], params.get("ttt_loss_type", "dot_product")))
    return params


def grow(tensors, config, inter_multi, seed=0):
    """-> (grown tensors, grown config, the old inter_multi)."""
    new_config = copy.deepcopy(config)
    params = ttt_params(new_config)
    head_dim, old_multi = int(params["head_dim"]), params.get("inter_multi", 1)
    old_hidden, hidden = int(head_dim * old_multi), int(head_dim * inter_multi)
    if hidden <= old_hidden:
        raise ValueError("--inter-multi %g does not grow the model's %g" % (inter_multi, old_multi))
    params["inter_multi"] = inter_multi
    gen, extra, out = torch.Generator().manual_seed(seed), hidden - old_hidden, {}
    for key, value in tensors.items():
        name = key.rsplit(".", 1)[-1]
        if ".f." not in key or name not in ("w0", "w1", "w2"):
            out[key] = value.clone()
            continue
        h, d = value.shape[0], head_dim
        if name == "w1":  # [h, hidden, d]: new rows, as the module initialises W1
            new = torch.randn(h, extra, d, generator=gen, dtype=torch.float64) / math.sqrt(hidden)
            out[key] = torch.cat([value, new.to(value.dtype)], dim=1)
        else:  # [h, d, hidden]: W0 new random columns, W2 new zero columns
            new = torch.randn(h, d, extra, generator=gen, dtype=torch.float64) / math.sqrt(d)
            out[key] = torch.cat([value, (new if name == "w0" else torch.zeros_like(new)).to(value.dtype)], dim=2)
    return out, new_config, old_multi


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--inter-multi", type=float, required=True, help="TTT hidden size / head_dim of the grown model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--seed", type=int, default=0, help="of the new W0 and W1 entries")
    ap.add_argument("--tol", type=float, default=1e-5,
                    help="max abs render difference allowed (the wider products sum in another order: ~1e-6)")
    a = ap.parse_args(argv)
    tensors, meta, config = load_model(a.model)
    try:
        grown, new_config, old_multi = grow(tensors, config, a.inter_multi, a.seed)
    except (ValueError, KeyError) as e:
        sys.exit("%s: %s" % (a.model, e))
    what = "grown TTT inter_multi %g -> %g" % (old_multi, a.inter_multi)
    grown_from = "%s (inter_multi %g; tools/train/grow_memory.py --inter-multi %g)" % (
        os.path.basename(a.model), old_multi, a.inter_multi)
    save_if_same(a.model, a.output, (tensors, meta, config), (grown, meta, new_config), what, grown_from, a.tol)


if __name__ == "__main__":
    main()
