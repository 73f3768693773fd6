#!/usr/bin/env python3
"""Checks that the C++ engine renders what the PyTorch reference renders for a model on one LaCT-layout scene.

Runs `lact render --save-npy` and the reference (tools/reference) on the same views (RGBA composited onto white
with PIL's integer arithmetic, as both loaders do; images already at the working size) and prints the max abs
difference. Exit 1 above --tolerance.

  /usr/bin/python3 -m tools.train.check_engine --lact build/app/lact --model models/M.safetensors \
      --scene examples/gso_toy_64 --inputs 16,20,24,28,34,38,42,46 --targets 18,22,26,30
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from tools.reference.lact_reference import LaCTModel
from tools.train.lact_data import read_image_rgba


def composite_like_pil(rgba):
    """Image.paste(rgba, mask=alpha) onto white: MULDIV255(255, 255 - a) + MULDIV255(c, a)."""
    def muldiv255(a, b):
        t = a.astype(np.int64) * b + 128
        return ((t >> 8) + t) >> 8
    a = rgba[..., 3:4].astype(np.int64)
    return (muldiv255(np.int64(255), 255 - a) + muldiv255(rgba[..., :3].astype(np.int64), a)) / 255.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lact", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--scene", required=True, help="folder with opencv_cameras.json")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    a = ap.parse_args()
    frames = json.load(open(os.path.join(a.scene, "opencv_cameras.json")))
    inputs, targets = [int(i) for i in a.inputs.split(",")], [int(i) for i in a.targets.split(",")]
    h, w = frames[0]["h"], frames[0]["w"]

    def cameras(ids):
        k = torch.tensor([[frames[i][n] for n in ("fx", "fy", "cx", "cy")] for i in ids], dtype=torch.float64)
        c2w = torch.tensor(np.stack([np.linalg.inv(np.array(frames[i]["w2c"], dtype=np.float64)) for i in ids]))
        return k[None], c2w[None]

    images = np.stack([composite_like_pil(read_image_rgba(os.path.join(a.scene, frames[i]["file_path"])))
                       for i in inputs]).transpose(0, 3, 1, 2)
    model = LaCTModel.from_safetensors(a.model).double().eval()
    k_in, c_in = cameras(inputs)
    k_t, c_t = cameras(targets)
    with torch.no_grad():
        states = model.encode(torch.tensor(images, dtype=torch.float64)[None], k_in, c_in)
        ref = model.render(states, k_t, c_t, h, w)[0].numpy().transpose(0, 2, 3, 1)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([a.lact, "render", "--model", a.model, "--data", a.scene, "--inputs", a.inputs, "--targets",
                        a.targets, "--size", "%dx%d" % (h, w), "--save-npy", "--out", out, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        name = os.path.basename(os.path.normpath(a.scene))
        engine = np.stack([np.load(os.path.join(out, name, "%d.npy" % t)) for t in targets])
    diff = float(np.abs(engine - ref).max())
    print("engine vs PyTorch reference (float64) on %s, %d inputs, %d targets at %dx%d: max abs %.3g" % (
        a.scene, len(inputs), len(targets), h, w, diff))
    sys.exit(0 if diff <= a.tolerance else 1)


if __name__ == "__main__":
    main()
