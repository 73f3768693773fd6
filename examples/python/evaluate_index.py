#!/usr/bin/env python3
"""Mean PSNR / SSIM over the scenes of an index (or one scene): encode the inputs, render and score the targets.
Usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/evaluate_index.py MODEL DATA"""
import argparse

import lact
import numpy as np

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model", help="a .safetensors model, e.g. models/lact_tiny_obj64.safetensors")
parser.add_argument("data", help="an index or a scene, e.g. examples/gso_toy_64")
args = parser.parse_args()

model = lact.Model(args.model)
scores = []
for name in lact.scene_names(args.data):
    scene = lact.read_scene(args.data, inputs="uniform:8", targets="rest", size=model.training_size, scene=name)
    i, t = scene.inputs, scene.targets
    state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
    for got, gt in zip(model.render(state, scene.intrinsics[t], scene.c2w[t]), scene.images[t]):
        scores.append((lact.psnr(got, gt), lact.ssim(got, gt)))
    print(f"{scene.name}: {len(t)} targets, PSNR {np.mean([s[0] for s in scores[-len(t):]]):.2f} dB")
psnr, ssim = np.mean(scores, axis=0)
print(f"mean over {len(scores)} views: PSNR {psnr:.2f} dB, SSIM {ssim:.4f}")
