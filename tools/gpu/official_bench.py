#!/usr/bin/env python3
"""Time the official LaCT code (lact_nvs: model.py, lact_ttt.py) on the same device and inputs as `lact bench`.

The official code is not part of lact: tools/gpu/make_bundle.sh copies it from its repository into an ignored folder
(.gpu_official/lact_nvs) that the device call carries, and this script imports it from there. Random weights (the
official initialisation), 48 input views by default, bf16 autocast as the paper times it, no_grad; encode is
LaCTLVSM.reconstruct, render is LaCTLVSM.rendering of --targets views. CUDA events around each run, --warmup runs
first, the median of --repeat. Also times torch's scaled_dot_product_attention at the model's attention shape (each
backend torch has: flash, cuDNN, efficient, math) for the attention TFLOP/s column. Prints one JSON line.

On an old torch (the CPU dry run: Debian's 1.13) the few newer pieces the official code uses (torch.compile,
nn.RMSNorm, LayerNorm(bias=False), F.scaled_dot_product_attention) are filled in with plain equivalents, and the
JSON says which ("shims"); on the GPU image's torch none is needed.

usage: python3 tools/gpu/official_bench.py --official .gpu_official [--views 48] [--size 512] [--targets 8]
           [--repeat 3] [--warmup 1] [--device cuda] [--layers 24 --dim 768] [--json FILE]
"""
import argparse
import contextlib
import inspect
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def add_shims():
    """Plain stand-ins for what torch < 2.4 lacks; returns their names."""
    shims = []
    if not hasattr(torch, "compile"):
        torch.compile = lambda f=None, **_: f if f is not None else (lambda g: g)
        shims.append("torch.compile (identity)")
    if not hasattr(nn, "RMSNorm"):
        class RMSNorm(nn.Module):
            def __init__(self, size, eps=None, elementwise_affine=True):
                super().__init__()
                self.eps = eps
                self.weight = nn.Parameter(torch.ones(size)) if elementwise_affine else None

            def reset_parameters(self):
                if self.weight is not None:
                    nn.init.ones_(self.weight)

            def forward(self, x):
                eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
                y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
                return y * self.weight if self.weight is not None else y
        nn.RMSNorm = RMSNorm
        shims.append("nn.RMSNorm")
    if "bias" not in inspect.signature(nn.LayerNorm.__init__).parameters:
        base = nn.LayerNorm

        class LayerNorm(base):
            def __init__(self, shape, eps=1e-5, elementwise_affine=True, bias=True):
                super().__init__(shape, eps=eps, elementwise_affine=elementwise_affine)
                if not bias and self.bias is not None:
                    self.bias = None

            def reset_parameters(self):
                if getattr(self, "weight", None) is not None:
                    nn.init.ones_(self.weight)
                if getattr(self, "bias", None) is not None:
                    nn.init.zeros_(self.bias)
        nn.LayerNorm = LayerNorm
        shims.append("nn.LayerNorm(bias=)")
    if not hasattr(F, "scaled_dot_product_attention"):
        def sdpa(q, k, v, is_causal=False, scale=None):
            s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
            return torch.softmax(s.float(), dim=-1).to(v.dtype) @ v
        F.scaled_dot_product_attention = sdpa
        shims.append("F.scaled_dot_product_attention (math)")
    return shims


def config(layers, dim):
    """lact_l24_d768_ttt2x.yaml (the official config) with its layer count and width as given."""
    return {"patch_size": 8, "dim": dim, "layers": layers, "block_config": [
        {"type": "model.SelfAttention", "length_dim": "l", "params": {"head_dim": 64, "use_qk_norm": True}},
        {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl",
         "params": {"head_dim": dim, "inter_multi": 2, "base_lr": 0.01, "muon_update_steps": 5}},
        {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": 4}}]}


def cameras(views, size, device):
    """A ring of cameras at radius 2.5 looking at the origin (OpenCV), ~50 degrees of field."""
    f = 0.5 * size / math.tan(math.radians(25))
    fxfycxcy = torch.tensor([f, f, size / 2, size / 2]).repeat(1, views, 1)
    c2w = torch.eye(4).repeat(1, views, 1, 1)
    for i in range(views):
        a = 2 * math.pi * i / views
        pos = torch.tensor([2.5 * math.cos(a), 2.5 * math.sin(a), 0.5])
        fwd = -pos / pos.norm()
        right = torch.linalg.cross(fwd, torch.tensor([0.0, 0.0, 1.0]))
        right = right / right.norm()
        down = torch.linalg.cross(fwd, right)
        c2w[0, i, :3, :3] = torch.stack([right, down, fwd], dim=1)
        c2w[0, i, :3, 3] = pos
    return fxfycxcy.to(device), c2w.to(device)


class Timer:
    """Seconds of device time for a callable: CUDA events on a GPU, the clock on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def __call__(self, f):
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = f()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3, out
        t = time.perf_counter()
        out = f()
        return time.perf_counter() - t, out


def median_time(timer, f, repeat, warmup):
    for _ in range(warmup):
        timer(f)
    return statistics.median(timer(f)[0] for _ in range(repeat))


def sdpa_rates(timer, device, views, tokens, dim, repeat):
    """TFLOP/s of torch's SDPA at [views, heads, tokens, 64] bf16, by default and through each backend torch has."""
    heads = dim // 64
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    q, k, v = (torch.randn(views, heads, tokens, 64, device=device, dtype=dtype) for _ in range(3))
    flop = 4.0 * views * heads * tokens * tokens * 64
    rates = {"default": flop / median_time(timer, lambda: F.scaled_dot_product_attention(q, k, v), repeat, 1) / 1e12}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return rates
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        backend = getattr(SDPBackend, name, None)
        if backend is None or device.type != "cuda":
            continue
        try:
            with sdpa_kernel(backend):
                t = median_time(timer, lambda: F.scaled_dot_product_attention(q, k, v), repeat, 1)
            rates[name.split("_")[0].lower()] = flop / t / 1e12
        except RuntimeError as e:  # this backend does not take the shape here
            rates[name.split("_")[0].lower()] = "refused: " + str(e).splitlines()[0][:120]
    return rates


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--official", required=True, help="folder holding lact_nvs/ (model.py, lact_ttt.py)")
    ap.add_argument("--views", type=int, default=48)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--targets", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp32"], help="autocast dtype (bf16: the paper's)")
    ap.add_argument("--json", default=None, help="also write the JSON line here")
    a = ap.parse_args()
    nvs = os.path.join(a.official, "lact_nvs")
    if not os.path.isfile(os.path.join(nvs, "model.py")):
        sys.exit(f"--official: no lact_nvs/model.py in {a.official} (tools/gpu/make_bundle.sh copies it there)")
    shims = add_shims()
    sys.path.insert(0, nvs)  # the official modules import each other by their bare names (lact_ttt, model)
    sys.path.insert(1, os.path.join(a.official, "pylib"))  # einops, where the device image lacks it
    if a.device == "cuda":
        try:
            torch._dynamo.config.suppress_errors = True  # a torch.compile that fails runs eagerly (said in the log)
        except AttributeError as e:  # a torch without the setting: a failing compile then fails the run
            print(f"official_bench: torch._dynamo.config.suppress_errors: {e}", file=sys.stderr)
    from model import LaCTLVSM

    device = torch.device(a.device)
    torch.manual_seed(0)
    model = LaCTLVSM(**config(a.layers, a.dim)).to(device).eval()
    n_params = sum(p.numel() for p in model.parameters())
    fxfycxcy, c2w = cameras(a.views + a.targets, a.size, device)
    images = torch.rand(1, a.views, 3, a.size, a.size, generator=torch.Generator().manual_seed(0)).to(device)
    inputs = {"image": images, "fxfycxcy": fxfycxcy[:, :a.views], "c2w": c2w[:, :a.views]}
    targets = {"fxfycxcy": fxfycxcy[:, a.views:], "c2w": c2w[:, a.views:]}
    timer = Timer(device)

    def autocast():
        if a.precision == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)

    def encode():
        with autocast(), torch.no_grad():
            return model.reconstruct(dict(inputs))

    result = {
        "code": "official lact_nvs", "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "precision": a.precision, "views": a.views, "size": a.size,
        "targets": a.targets, "layers": a.layers, "dim": a.dim, "params": n_params, "shims": shims,
        "repeat": a.repeat, "warmup": a.warmup,
    }

    def save(stage, **values):
        """The JSON so far, after each stage: a run killed or out of memory later keeps what it measured."""
        result.update(values, stage=stage)
        if a.json:
            with open(a.json + ".part", "w") as f:
                f.write(json.dumps(result) + "\n")
            os.replace(a.json + ".part", a.json)

    first_s, states = timer(encode)  # torch.compile's compilation lands here
    states = encode()

    def render():
        with autocast(), torch.no_grad():
            return model.rendering(dict(targets), states, a.size, a.size)

    save("encode timed; render not yet", first_encode_s=round(first_s, 4),
         encode_s=round(median_time(timer, encode, a.repeat, max(0, a.warmup - 1)), 4))
    save("render timed; SDPA not yet", render_fps=round(a.targets / median_time(timer, render, a.repeat, a.warmup), 3))
    tokens = (a.size // 8) ** 2
    save("done", sdpa_tflops=sdpa_rates(timer, device, a.views, tokens, a.dim, a.repeat))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
