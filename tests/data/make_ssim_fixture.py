#!/usr/bin/env python3
"""Makes tests/data/ssim_fixture.json: small image pairs and their SSIM and PSNR as scikit-image computes them
(structural_similarity with gaussian_weights=True, sigma=1.5, data_range=1.0, channel_axis=-1: LVSM's setting).

Run: /usr/bin/python3 tests/data/make_ssim_fixture.py   (needs Debian's python3-skimage)
"""
import json
import os

import numpy as np
from skimage.metrics import peak_signal_noise_ratio, structural_similarity


def pair(rng, h, w, kind):
    y, x = np.mgrid[0:h, 0:w] / max(h, w)
    base = np.stack([0.5 + 0.4 * np.sin(6 * x + c) * np.cos(4 * y - c) for c in range(3)], axis=-1)
    if kind == "noise":
        other = base + rng.normal(0, 0.05, base.shape)
    elif kind == "shift":
        other = np.roll(base, 2, axis=1) * 0.9 + 0.05
    else:  # blocks: piecewise constant vs smooth
        other = np.floor(base * 4) / 4 + rng.uniform(-0.02, 0.02, base.shape)
    return np.clip(base, 0, 1).astype(np.float32), np.clip(other, 0, 1).astype(np.float32)


def main():
    rng = np.random.default_rng(7)
    cases = []
    for h, w, kind in [(16, 20, "noise"), (24, 32, "shift"), (33, 17, "blocks"), (12, 12, "noise")]:
        a, b = pair(rng, h, w, kind)
        s = structural_similarity(a.astype(np.float64), b.astype(np.float64), gaussian_weights=True, sigma=1.5,
                                  use_sample_covariance=True, data_range=1.0, channel_axis=-1)
        p = peak_signal_noise_ratio(a.astype(np.float64), b.astype(np.float64), data_range=1.0)
        cases.append({"height": h, "width": w, "kind": kind, "a": a.flatten().tolist(), "b": b.flatten().tolist(),
                      "ssim": float(s), "psnr": float(p)})
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ssim_fixture.json")
    with open(out, "w") as f:
        json.dump({"generator": "tests/data/make_ssim_fixture.py", "skimage": __import__("skimage").__version__,
                   "cases": cases}, f)
    for c in cases:
        print(c["height"], c["width"], c["kind"], "ssim %.6f psnr %.4f" % (c["ssim"], c["psnr"]))


if __name__ == "__main__":
    main()
