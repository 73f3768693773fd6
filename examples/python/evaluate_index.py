#!/usr/bin/env python3
"""Mean PSNR / SSIM over the scenes of an index (or one scene): encode the inputs, render and score the targets.
Usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/evaluate_index.py MODEL DATA"""
import sys

import lact
import numpy as np

model = lact.Model(sys.argv[1])
scores = []
for name in lact.scene_names(sys.argv[2]):
    scene = lact.read_scene(sys.argv[2], inputs="uniform:8", targets="rest", size=model.training_size, scene=name)
    i, t = scene.inputs, scene.targets
    state = model.encode(scene.images[i], scene.intrinsics[i], scene.c2w[i])
    for got, gt in zip(model.render(state, scene.intrinsics[t], scene.c2w[t]), scene.images[t]):
        scores.append((lact.psnr(got, gt), lact.ssim(got, gt)))
    print(f"{scene.name}: {len(t)} targets, PSNR {np.mean([s[0] for s in scores[-len(t):]]):.2f} dB")
psnr, ssim = np.mean(scores, axis=0)
print(f"mean over {len(scores)} views: PSNR {psnr:.2f} dB, SSIM {ssim:.4f}")
