#!/usr/bin/env python3
"""Export a trainer checkpoint to a LaCT model file (official state-dict key names, F32).

usage: python3 -m tools.train.export OUT/ckpt_last.pt -o model.safetensors

Metadata: config (JSON), image_size ('HxW' trained at), input_views (training input views), kind ('object':
this trainer's data is objects at the origin; the CLI's guard rails read it), format ('lact model'), training (JSON: steps, samples, data, time, hardware, last validation).
The file is read back with LaCTModel.from_safetensors (strict) and checked against the
checkpoint's weights before the command succeeds.
"""
import argparse
import json
import os
import sys
import time

import torch

from tools.reference import safetensors_io
from tools.reference.lact_reference import LaCTModel

FORMAT = "lact model"
WRAPPERS = ("_orig_mod.", "module.")


def load_ckpt(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:
        return torch.load(path, map_location="cpu")


def strip(key):
    changed = True
    while changed:
        changed = False
        for w in WRAPPERS:
            if key.startswith(w):
                key, changed = key[len(w):], True
    return key


def data_names(value):
    """Data as recorded in the model: file names, never a path of the training machine."""
    if isinstance(value, (list, tuple)):
        return [data_names(v) for v in value]
    if isinstance(value, str) and os.sep in value and not value.startswith("synthetic:"):
        return os.path.basename(value.rstrip(os.sep))
    return value


def summary(ckpt, ckpt_path, data_name=None, val_name=None, init_name=None):
    st, args = ckpt.get("state", {}), ckpt.get("args", {})
    val = st.get("last_val") or {}
    return {
        "steps": st.get("step"), "samples": st.get("samples"),
        "train_seconds": round(float(st.get("elapsed", 0.0)), 1),
        "cpu_hours": round(float(st.get("cpu_seconds", st.get("elapsed", 0.0))) / 3600, 3),
        "ranks": args.get("ranks", 1),
        "wall_seconds": round(float(st.get("wall", 0.0)), 1), "runs": st.get("runs"),
        "data": data_name or data_names(st.get("data", args.get("data"))),
        "val_data": val_name or data_names(args.get("val_data")),
        "init": init_name or data_names(args.get("init")),
        "hardware": st.get("hardware"), "amp": st.get("amp"), "params": st.get("params"),
        "batch": args.get("batch"), "n_target": [args.get("n_target_min"), args.get("n_target_max")],
        "lr": args.get("lr"), "ssim_weight": args.get("ssim_weight"), "bg_random": args.get("bg_random"),
        "seed": args.get("seed"),
        "val": {k: (round(val[k], 4) if isinstance(val.get(k), float) else val.get(k))
                for k in ("step", "psnr", "psnr_white", "psnr_nearest", "ssim", "images") if k in val},
        "checkpoint": os.path.basename(ckpt_path), "exported": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "tool": "tools/train/train.py",
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--data-name", help="the training data as the model records it (name and generator command); "
                                        "default: the data files' names")
    ap.add_argument("--val-name", help="the validation data as the model records it")
    ap.add_argument("--init-name", help="the starting model as the model records it (e.g. how it was grown); "
                                        "default: the --init file's name")
    a = ap.parse_args(argv)
    ckpt = load_ckpt(a.checkpoint)
    config, args = ckpt["config"], ckpt.get("args", {})
    sd = {}
    for k, v in ckpt["model"].items():
        name = strip(k)
        if name in sd:
            raise SystemExit("export: key %r twice after stripping wrappers" % name)
        sd[name] = v.detach().float().cpu()
    model = LaCTModel(config)
    model.load_state_dict(sd, strict=True)  # official key names and shapes
    size = int(args.get("size", 0) or 0)
    meta = {
        "config": json.dumps(config),
        "image_size": "%dx%d" % (size, size),
        "input_views": str(args.get("n_input", "")),
        "kind": "object",  # tools/render_objects: one object at the origin, cameras around it
        "format": FORMAT,
        "training": json.dumps(summary(ckpt, a.checkpoint, a.data_name, a.val_name, a.init_name), sort_keys=True),
    }
    out_dir = os.path.dirname(os.path.abspath(a.output))
    os.makedirs(out_dir, exist_ok=True)
    tmp = a.output + ".tmp"
    safetensors_io.save(tmp, sd, meta)
    back = LaCTModel.from_safetensors(tmp)
    for k, v in back.state_dict().items():
        if not torch.equal(v, sd[k]):
            raise SystemExit("export: %s differs after the round trip" % k)
    os.replace(tmp, a.output)
    print("export: %s (%d tensors, %.1f MB; config dim %s layers %s; image_size %s, input_views %s; "
          "step %s)" % (a.output, len(sd), os.path.getsize(a.output) / 2**20, config.get("dim"),
                        config.get("layers"), meta["image_size"], meta["input_views"],
                        ckpt.get("state", {}).get("step")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
