#!/usr/bin/env python3
"""Evaluate a LaCT model file on held-out objects, with the trainer's validation metrics.

usage: python3 -m tools.train.evaluate model.safetensors --data DATA [DATA ...]
       [--inputs 0-7 --targets 8-11 | --n-input 8 --n-target 4 [--split-seed 1234]] [--size 64]

PSNR per target image (mean over images) of the model, of an all-white image and of the nearest
input view (closest camera forward axis), plus SSIM; one JSON line per object with --per-object.
"""
import argparse
import json
import sys

import numpy as np
import torch

from tools.reference.lact_reference import LaCTModel
from tools.reference.safetensors_io import load as st_load
from tools.train import lact_data
from tools.train.batches import Sampler, load_sources
from tools.train.validation import validate


def parse_views(spec):
    out = []
    for part in spec.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--data", nargs="+", required=True)
    ap.add_argument("--inputs", help="input view indices, e.g. 0-7 or 0,4,8")
    ap.add_argument("--targets", help="target view indices, e.g. 8-11")
    ap.add_argument("--n-input", type=int, default=0, help="default: the model's input_views metadata, else 8")
    ap.add_argument("--n-target", type=int, default=4)
    ap.add_argument("--split-seed", type=int, default=1234)
    ap.add_argument("--size", type=int, default=0, help="working size (default: the model's image_size)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--per-object", action="store_true")
    a = ap.parse_args(argv)

    _, meta = st_load(a.model)
    model = LaCTModel.from_safetensors(a.model).to(a.device).eval()
    size = a.size or int(str(meta.get("image_size", "64x64")).split("x")[0])
    n_input = a.n_input or int(meta.get("input_views") or 8)
    objs = load_sources(a.data, (size, size), torch.device(a.device), lambda s: None)
    if a.inputs or a.targets:
        ins, tgs = parse_views(a.inputs or "0-7"), parse_views(a.targets or "8-11")
        n_input = len(ins)
        splits = [np.array(ins + tgs) for _ in range(len(objs))]
    else:
        splits = lact_data.fixed_splits(objs, n_input, a.n_target, a.split_seed)

    def amp_ctx():
        return torch.autocast(device_type="cpu", enabled=False)
    rows = []
    for i in range(len(objs)):
        r = validate(model, Sampler(objs.subset([i]), (size, size), torch.device(a.device), False),
                           [splits[i]], n_input, 1, amp_ctx)
        r["object"] = objs.names[i]
        rows.append(r)
        if a.per_object:
            print(json.dumps(r, sort_keys=True))
    keys = ("psnr", "psnr_white", "psnr_nearest", "ssim")
    total = sum(r["images"] for r in rows)
    summary = {k: sum(r[k] * r["images"] for r in rows) / total for k in keys}
    summary.update({"objects": len(rows), "images": total, "size": size, "n_input": n_input, "model": a.model})
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
