#!/usr/bin/env python3
"""Time the PyTorch reference (fp32, no_grad) on random weights.

Default model: the official lact_l24_d768_ttt2x config. Prints one JSON line
{"encode_s": ..., "render_s_per_view": ..., ...}.

usage: /usr/bin/python3 -m tools.reference.bench_reference [--config CFG.yaml | --config-json TEXT] [--views-in 2]
           [--views-out 1] [--size 128] [--threads 2] [--ns-dtype bf16] [--device cpu]
           [--repeats 1] [--warmup 0]
"""
import argparse
import json
import os
import statistics
import sys
import time

if __name__ == "__main__" and not __package__:
    # `lact bench --reference` (app/cmd_bench.cpp) runs this file by its path: run it again as the package's module,
    # with the repository root on PYTHONPATH (the one tool that keeps working by path)
    ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    PYTHONPATH = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    os.execve(sys.executable, [sys.executable, "-m", "tools.reference.bench_reference"] + sys.argv[1:],
              dict(os.environ, PYTHONPATH=PYTHONPATH))

import torch  # noqa: E402

from tools.reference.lact_reference import LaCTModel, load_config  # noqa: E402

L24_D768_TTT2X = {
    "patch_size": 8, "dim": 768, "layers": 24,
    "block_config": [
        {"type": "model.SelfAttention", "length_dim": "l", "params": {"head_dim": 64, "use_qk_norm": True}},
        {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl",
         "params": {"head_dim": 768, "inter_multi": 2, "base_lr": 0.01, "muon_update_steps": 5}},
        {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": 4}},
    ],
}


def random_inputs(b, v, size, device, gen):
    """Random images and simple cameras at radius 2.5 looking at the origin (OpenCV)."""
    imgs = torch.rand(b, v, 3, size, size, generator=gen).to(device)
    f = 0.5 * size / 0.4663  # ~50 deg horizontal fov
    intr = torch.tensor([f, f, size / 2, size / 2]).repeat(b, v, 1).to(device)
    c2w = torch.eye(4).repeat(b, v, 1, 1)
    for i in range(v):
        ang = torch.tensor(2 * 3.14159265 * i / max(v, 1))
        pos = torch.stack([2.5 * torch.cos(ang), 2.5 * torch.sin(ang), torch.tensor(0.5)])
        fwd = -pos / pos.norm()
        right = torch.cross(fwd, torch.tensor([0.0, 0.0, 1.0]), dim=0)
        right = right / right.norm()
        down = torch.cross(fwd, right, dim=0)
        c2w[:, i, :3, :3] = torch.stack([right, down, fwd], dim=1)
        c2w[:, i, :3, 3] = pos
    return imgs, intr, c2w.to(device)


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=None, help="official YAML/JSON config (default l24 d768 ttt2x)")
    ap.add_argument("--config-json", default=None, help="the config itself as JSON text (lact bench --reference)")
    ap.add_argument("--views-in", type=int, default=2)
    ap.add_argument("--views-out", type=int, default=1)
    ap.add_argument("--size", type=int, default=128, help="square image size (multiple of 8)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ns-dtype", default=None, choices=[None, "bf16"], help="bf16 mimics the official code")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=1, help="timed repetitions (the median is reported)")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs first (as lact bench's --warmup)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    if a.config_json:
        config = json.loads(a.config_json)
        missing = [k for k in ("patch_size", "dim", "layers", "block_config") if k not in config]
        if missing:
            sys.exit("--config-json: the config lacks %s" % ", ".join(missing))
    else:
        config = load_config(a.config) if a.config else L24_D768_TTT2X
    torch.manual_seed(0)
    model = LaCTModel(config, ns_dtype=a.ns_dtype).to(a.device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(0)
    imgs, intr, c2w = random_inputs(1, a.views_in + a.views_out, a.size, a.device, gen)
    vi = a.views_in

    enc_times, ren_times = [], []
    with torch.no_grad():
        for r in range(-a.warmup, a.repeats):
            sync(a.device)
            t0 = time.perf_counter()
            states = model.encode(imgs[:, :vi], intr[:, :vi], c2w[:, :vi])
            sync(a.device)
            t1 = time.perf_counter()
            out = model.render(states, intr[:, vi:], c2w[:, vi:], a.size, a.size, views_per_chunk=1)
            sync(a.device)
            t2 = time.perf_counter()
            if r >= 0:
                enc_times.append(t1 - t0)
                ren_times.append((t2 - t1) / a.views_out)
    n_params = sum(p.numel() for p in model.parameters())
    print(json.dumps({
        "encode_s": round(statistics.median(enc_times), 4), "encode_min_s": round(min(enc_times), 4),
        "render_s_per_view": round(statistics.median(ren_times), 4), "repeats": a.repeats, "warmup": a.warmup,
        "views_in": vi, "views_out": a.views_out, "size": a.size, "threads": a.threads,
        "ns_dtype": a.ns_dtype or "fp32", "params": n_params, "device": a.device,
        "torch": torch.__version__, "out_mean": round(float(out.mean()), 4),
    }))


if __name__ == "__main__":
    main()
