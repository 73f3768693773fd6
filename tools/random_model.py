#!/usr/bin/env python3
"""Writes a LaCT model file of random weights with the paper's layer shapes (or scaled ones), for memory and
speed measurements of `lact encode` on real scenes (docs/guide/scale.md). Standard library only.

    tools/random_model.py OUT.safetensors --layers 2 [--dim 768 --inter-multi 2 --ttt-loss-type dot_product]

Weights: normal(0, 0.02) for projections, normal(0, 1/sqrt(fan-in)) for the fast weights, ones for the norms;
one random block of values repeated (so a 312M-parameter file takes seconds, not minutes)."""

import argparse
import array
import json
import math
import random
import struct
import sys

BLOCK = 1 << 16  # distinct random values per scale; repeated through a tensor


def model_config(args):
    ttt = {"head_dim": args.dim, "inter_multi": args.inter_multi, "base_lr": 0.01, "muon_update_steps": 5}
    if args.ttt_loss_type != "dot_product":
        ttt["ttt_loss_type"] = args.ttt_loss_type
    return {
        "patch_size": 8,
        "dim": args.dim,
        "layers": args.layers,
        "block_config": [
            {"type": "model.SelfAttention", "length_dim": "l", "params": {"head_dim": 64, "use_qk_norm": True}},
            {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl", "params": ttt},
            {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": 4}},
        ],
    }


def tensor_list(args):
    """(name, shape, scale) for every tensor: scale 0 means ones (a norm), -1 zeros."""
    dim, patch = args.dim, 8
    hidden = int(dim * args.inter_multi)
    out = [("input_linear.weight", [dim, 12 * patch * patch], 0.02), ("input_layernorm.weight", [dim], 0)]
    for layer in range(args.layers):
        p = "blocks.%d.module_list." % layer
        out += [(p + "0.f.to_qkv.weight", [3 * dim, dim], 0.02), (p + "0.f.c_proj.weight", [dim, dim], 0.02),
                (p + "0.f.q_norm.weight", [64], 0), (p + "0.f.k_norm.weight", [64], 0), (p + "0.ln.weight", [dim], 0)]
        out += [(p + "1.f.w0", [1, dim, hidden], 1 / math.sqrt(dim)), (p + "1.f.w1", [1, hidden, dim],
                                                                       1 / math.sqrt(hidden)),
                (p + "1.f.w2", [1, dim, hidden], 1 / math.sqrt(dim)), (p + "1.f.to_qkv.weight", [3 * dim, dim], 0.02),
                (p + "1.f.c_proj.weight", [dim, dim], 0.02), (p + "1.f.lr_fc.weight", [3, dim], 0.02),
                (p + "1.f.lr_fc.bias", [3], -1), (p + "1.f.o_norm.weight", [dim], 0), (p + "1.ln.weight", [dim], 0)]
        out += [(p + "2.f.c_fc.weight", [4 * dim, dim], 0.02), (p + "2.f.c_proj.weight", [dim, 4 * dim], 0.02),
                (p + "2.ln.weight", [dim], 0)]
    out += [("image_token_decoder.0.weight", [dim], 0), ("image_token_decoder.1.weight", [3 * patch * patch, dim],
                                                        0.02)]
    return out


def values(count, scale, rng, cache):
    if scale == 0 or scale == -1:
        block = array.array("f", [1.0 if scale == 0 else 0.0]) * BLOCK
    else:
        if scale not in cache:
            cache[scale] = array.array("f", [rng.gauss(0, scale) for _ in range(BLOCK)]).tobytes()
        block = cache[scale]
        return (block * (count // BLOCK + 1))[:4 * count]
    return (block.tobytes() * (count // BLOCK + 1))[:4 * count]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--inter-multi", type=float, default=2)
    parser.add_argument("--ttt-loss-type", default="dot_product", help="the variant's key, e.g. only_w1_no_wn (V2)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.layers < 1 or args.dim < 64 or args.dim % 64:
        sys.exit("random_model.py: --layers must be >= 1 and --dim a multiple of 64")
    rng, cache = random.Random(args.seed), {}
    tensors = tensor_list(args)
    header, offset = {}, 0
    for name, shape, _ in tensors:
        size = 4 * math.prod(shape)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"config": json.dumps(model_config(args)), "format": "lact model",
                              "image_size": "256x256", "input_views": "4"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(args.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, shape, scale in tensors:
            f.write(values(math.prod(shape), scale, rng, cache))
    print("%s: %d layers, dim %d, %.1fM parameters" % (args.out, args.layers, args.dim, offset / 4e6))


if __name__ == "__main__":
    main()
