#!/usr/bin/env python3
"""Train the LaCT NVS reference model (tools/reference/lact_reference.py) on object data.

Data (--data, --val-data; any mix, several allowed):
  PATH.shard                      a shard (format in lact_data.py / README.md)
  DIR | index.json | opencv_cameras.json   the LaCT object layout
  synthetic:objects=N[,views=V][,seed=S][,start=K][,layout=random|grid][,ss=2]
                                  procedural objects made in-process at --size (synthetic_data.py;
                                  on the GPU when training there)
Without --val-data the last --val-objects objects of --data are held out.
Extra validation sets, logged beside the main one (log.jsonl records of type "val_NAME"):
  --val-extra NAME=PATH ...       held-out data of another kind (random fixed splits, as --val-data)
  --val-real PATH --val-real-inputs 16,20,.. --val-real-targets 2,10,..
                                  a real scanned object with fixed input and target views, e.g. issue 15's
                                  acceptance views of examples/gso_toy_64 (type "val_real"; for the log only:
                                  checkpoints are never chosen by it)

Per step: --batch objects, each with a random split of its views into --n-input inputs and
n_target targets (uniform in [--n-target-min, --n-target-max], one value per step), RGBA
composited onto white, resized (cover + centre crop) to --size if the data differ.
Loss = MSE + --ssim-weight * (1 - SSIM). AdamW (betas 0.9/0.95, weight decay on >=2-D
parameters), linear warmup + cosine decay (by step, or with --time-schedule by wall time
against --max-minutes), gradient clipping. bf16 autocast on CUDA, fp32 on the CPU.

Outputs in --out: ckpt_last.pt (model, optimizer, schedule, step, RNG states; resumed
automatically by running the same command again), log.jsonl, preview.png (validation
targets vs predictions).  Export with tools/train/export.py OUT/ckpt_last.pt -o model.safetensors.
"""
import argparse
import json
import math
import os
import platform
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reference"))
import lact_data  # noqa: E402
from lact_reference import LaCTModel, VARIANT_PRESETS, TTT_VARIANTS, with_variant  # noqa: E402
import safetensors_io  # noqa: E402
from data_parallel import DataParallel, RANK_ENV, launch_workers, stop_workers  # noqa: E402
from ssim import ssim  # noqa: E402

CKPT_NAME = "ckpt_last.pt"


# ----------------------------------------------------------------------------- config
_COMMON = {"patch": 8, "ttt_inter_multi": 2, "ttt_base_lr": 0.01, "muon_steps": 5, "mlp_inter_multi": 4}
PRESETS = {  # parameters: tiny 1.57M, small 7.73M, medium 22.8M, base 40.4M
    "tiny": dict(_COMMON, dim=128, layers=4, attn_head_dim=32, ttt_head_dim=128),
    "small": dict(_COMMON, dim=256, layers=6, attn_head_dim=64, ttt_head_dim=128),
    "medium": dict(_COMMON, dim=384, layers=8, attn_head_dim=64, ttt_head_dim=192),
    "base": dict(_COMMON, dim=512, layers=8, attn_head_dim=64, ttt_head_dim=256),
}
def _num(x):
    x = float(x)
    return int(x) if x.is_integer() else x


def build_config(a):
    config = {
        "patch_size": a.patch,
        "dim": a.dim,
        "layers": a.layers,
        "block_config": [
            {"type": "model.SelfAttention", "length_dim": "l",
             "params": {"head_dim": a.attn_head_dim, "use_qk_norm": not a.no_qk_norm}},
            {"type": "lact_ttt.FastWeightGluMLPMultihead", "length_dim": "vl",
             "params": {"head_dim": a.ttt_head_dim, "inter_multi": _num(a.ttt_inter_multi),
                        "base_lr": a.ttt_base_lr, "muon_update_steps": a.muon_steps}},
            {"type": "model.MLP", "length_dim": "vl", "params": {"inter_multi": _num(a.mlp_inter_multi)}},
        ],
    }
    return with_variant(config, a.variant) if a.variant else config


class LaCTTrainModel(LaCTModel):
    """The reference model with its tokenizer (rays: einsum, cross, norms) kept in fp32 under
    autocast: CUDA autocast would run the einsum in bf16 and then fail in torch.cross on
    mixed dtypes, and bf16 rays lose precision. Same parameters and state-dict keys."""

    def tokenize(self, images, fxfycxcy, c2w, h, w):
        with torch.autocast(device_type=self.input_linear.weight.device.type, enabled=False):
            return super().tokenize(images, fxfycxcy, c2w, h, w)


def init_weights(model, seed):
    """GPT-style init: Linear N(0, 0.02), residual output projections scaled by
    1/sqrt(2 * residual branches), lr_fc small; fast weights keep the reference init."""
    gen = torch.Generator().manual_seed(seed)
    n_branches = sum(len(b.module_list) for b in model.blocks)
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if p.dim() == 1:
                if name.endswith("lr_fc.bias"):
                    p.zero_()
                else:
                    p.fill_(1.0)
            elif leaf in ("w0", "w2"):
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
            elif leaf == "w1":
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
            elif name.endswith("c_proj.weight"):
                p.copy_(torch.randn(p.shape, generator=gen) * (0.02 / math.sqrt(2 * n_branches)))
            elif "lr_fc" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.002)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


# ----------------------------------------------------------------------------- data
def load_sources(specs, size, device, log):
    objs = lact_data.ObjectSet()
    for spec in specs:
        if spec.startswith("synthetic:"):
            import synthetic_data
            kv = dict(item.split("=", 1) for item in spec[len("synthetic:"):].split(",") if item)
            n = int(kv.get("objects", 64))
            views = int(kv.get("views", 32))
            seed = int(kv.get("seed", 1))
            start = int(kv.get("start", 0))
            t0 = time.time()
            gen_dev = device if device.type == "cuda" else "cpu"
            images, cameras = synthetic_data.generate(seed, n, views, size[0], kv.get("layout", "random"),
                                                      ss=int(kv.get("ss", 2)), device=gen_dev, start=start)
            log("generated %s in %.1f s" % (spec, time.time() - t0))
            for i in range(n):
                objs.add(images[i], cameras[i], "synthetic_s%d_%06d" % (seed, start + i), spec)
        else:
            part = lact_data.load_objects([spec], size)
            for i in range(len(part)):
                objs.add(part.images[i], part.cameras[i], part.names[i], part.sources[i])
    return objs


class Sampler:
    """Draws training batches; keeps the whole set on the device when shapes agree and
    --data-on-device is set (CUDA default), else gathers from (memory-mapped) numpy."""

    def __init__(self, objs, size, device, on_device):
        self.objs, self.size, self.device = objs, size, device
        shapes = {im.shape for im in objs.images}
        self.bank = None
        if on_device and len(shapes) == 1:
            shape = next(iter(shapes))
            self.bank = torch.empty((len(objs),) + shape, dtype=torch.uint8, device=device)
            for i, im in enumerate(objs.images):
                self.bank[i].copy_(torch.from_numpy(np.ascontiguousarray(im)))
            self.bank_cams = torch.from_numpy(np.stack(objs.cameras)).to(device)

    def gather(self, obj_idx, view_idx, background=None):
        """-> rgb [B,N,3,h,w] float on device (white background, or background [B,3]),
        fxfycxcy [B,N,4], c2w [B,N,4,4]."""
        if self.bank is not None:
            oi = torch.as_tensor(np.asarray(obj_idx), device=self.device)[:, None]
            vi = torch.as_tensor(np.asarray(view_idx), device=self.device)
            raw, cam = self.bank[oi, vi], self.bank_cams[oi, vi]
        else:
            raws, cams = [], []
            for o, vids in zip(obj_idx, view_idx):
                vids = np.asarray(vids)
                order = np.argsort(vids, kind="stable")
                r = np.asarray(self.objs.images[o][vids[order]])
                raws.append(r[np.argsort(order, kind="stable")])
                cams.append(self.objs.cameras[o][vids])
            raw = torch.from_numpy(np.stack(raws)).to(self.device)
            cam = torch.from_numpy(np.stack(cams)).to(self.device)
        bg = None
        if background is not None:
            bg = torch.as_tensor(np.asarray(background, dtype=np.float32), device=self.device)[:, None, None, None, :]
        rgb = lact_data.composite_white(raw, bg)
        b, n = rgb.shape[:2]
        if self.size is not None and tuple(rgb.shape[-2:]) != tuple(self.size):
            r, c = lact_data.resize_cover(rgb.flatten(0, 1), cam.flatten(0, 1), *self.size)
            rgb, cam = r.view(b, n, *r.shape[1:]), c.view(b, n, 20)
        return rgb, cam[..., :4].contiguous(), cam[..., 4:].reshape(b, n, 4, 4).contiguous()

    def sample(self, rng, batch, n_input, n_target, bg_random=0.0, part=None):
        """A batch of `batch` objects; with part=(start, stop) only those objects are gathered, but the
        generator advances as for the whole batch (data_parallel.py: each rank renders its slice)."""
        objs = self.objs
        obj_idx = rng.choice(len(objs), size=batch, replace=len(objs) < batch)
        view_idx = []
        for o in obj_idx:
            nv = objs.images[o].shape[0]
            if nv < n_input + n_target:
                raise ValueError("object %s has %d views < %d + %d" % (objs.names[o], nv, n_input, n_target))
            view_idx.append(rng.permutation(nv)[:n_input + n_target])
        background = None
        if bg_random > 0:  # per object: a random background colour (inputs and targets alike)
            pick = rng.random(batch) < bg_random
            colours = rng.random((batch, 3))
            background = np.where(pick[:, None], colours, 1.0)
        view_idx = np.stack(view_idx)
        if part is not None:
            obj_idx, view_idx = obj_idx[part[0]:part[1]], view_idx[part[0]:part[1]]
            background = None if background is None else background[part[0]:part[1]]
        rgb, intr, c2w = self.gather(obj_idx, view_idx, background)
        return split_batch(rgb, intr, c2w, n_input)


def split_batch(rgb, intr, c2w, ni):
    return {"input_images": rgb[:, :ni], "input_fxfycxcy": intr[:, :ni], "input_c2w": c2w[:, :ni],
            "target_images": rgb[:, ni:], "target_fxfycxcy": intr[:, ni:], "target_c2w": c2w[:, ni:]}


# ----------------------------------------------------------------------------- schedule
class Schedule:
    """Linear warmup over `warmup` steps, then cosine from 1 to min_ratio; progress by step
    (steps) or, when time_budget is set, by training wall time."""

    def __init__(self, base_lr, warmup, steps, min_ratio, time_budget=None):
        self.base_lr, self.warmup, self.steps = base_lr, warmup, steps
        self.min_ratio, self.time_budget = min_ratio, time_budget
        self.warmup_end_time = None

    def factor(self, step, elapsed):
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.time_budget:
            if self.warmup_end_time is None:
                self.warmup_end_time = elapsed
            span = max(1e-6, self.time_budget - self.warmup_end_time)
            p = (elapsed - self.warmup_end_time) / span
        else:
            p = (step - self.warmup) / max(1, self.steps - self.warmup)
        p = min(1.0, max(0.0, p))
        return self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * p))

    def lr(self, step, elapsed):
        return self.base_lr * self.factor(step, elapsed)

    def state_dict(self):
        return dict(self.__dict__)

    def load_state_dict(self, d):
        self.warmup_end_time = d.get("warmup_end_time")


# ----------------------------------------------------------------------------- metrics
def psnr_from_mse(mse):
    return -10.0 * torch.log10(mse.clamp_min(1e-10))


def view_forward(c2w):
    return c2w[..., :3, 2]


@torch.no_grad()
def validate(model, sampler, splits, n_input, batch, amp_ctx, preview_path=None):
    """Model PSNR/SSIM on held-out objects vs a white image and vs the nearest input view
    (largest cosine between camera forward axes)."""
    model.eval()
    res = {"psnr": [], "psnr_white": [], "psnr_nearest": [], "ssim": []}
    preview = []
    for s in range(0, len(splits), batch):
        chunk = splits[s:s + batch]
        obj_idx = np.arange(s, s + len(chunk))
        rgb, intr, c2w = sampler.gather(obj_idx, np.stack(chunk))
        bt = split_batch(rgb, intr, c2w, n_input)
        with amp_ctx():
            pred = model(bt["input_images"], bt["input_fxfycxcy"], bt["input_c2w"],
                         bt["target_fxfycxcy"], bt["target_c2w"])
        pred = pred.float().clamp(0, 1)
        tgt = bt["target_images"]
        b, vt = tgt.shape[:2]
        res["psnr"].append(psnr_from_mse(((pred - tgt) ** 2).flatten(2).mean(-1)).flatten())
        res["psnr_white"].append(psnr_from_mse(((1 - tgt) ** 2).flatten(2).mean(-1)).flatten())
        cos = torch.einsum("btk,bik->bti", view_forward(bt["target_c2w"]), view_forward(bt["input_c2w"]))
        near = cos.argmax(-1)  # [b, vt]
        near_img = torch.gather(bt["input_images"], 1, near[..., None, None, None].expand_as(tgt))
        res["psnr_nearest"].append(psnr_from_mse(((near_img - tgt) ** 2).flatten(2).mean(-1)).flatten())
        res["ssim"].append(ssim(pred.flatten(0, 1), tgt.flatten(0, 1), reduction="none"))
        if preview_path and len(preview) < 4:
            for i in range(min(b, 4 - len(preview))):
                k = min(vt, 4)
                row = torch.cat([torch.cat(list(tgt[i, :k]), -1), torch.cat(list(pred[i, :k]), -1)], -1)
                preview.append(row)
    model.train()
    out = {k: float(torch.cat(v).mean()) for k, v in res.items()}
    out["images"] = int(torch.cat(res["psnr"]).numel())
    out["objects"] = len(splits)
    if preview_path and preview:
        img = torch.cat(preview, -2).permute(1, 2, 0)
        with open(preview_path + ".tmp", "wb") as f:
            f.write(lact_data.encode_png((img * 255 + 0.5).clamp(0, 255).byte().cpu().numpy()))
        os.replace(preview_path + ".tmp", preview_path)
    return out


# ----------------------------------------------------------------------------- checkpoints
def torch_load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:
        return torch.load(path, map_location="cpu")


def save_checkpoint(path, model, opt, sched, state, args, config):
    ckpt = {
        "model": model.state_dict(), "optimizer": opt.state_dict(), "schedule": sched.state_dict(),
        "config": config, "args": vars(args), "state": state,
        "rng": {"torch": torch.get_rng_state(), "numpy": state.pop("_np_rng"),
                "python": random.getstate(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
    }
    tmp = path + ".tmp"
    torch.save(ckpt, tmp)
    os.replace(tmp, path)


def validation_splits(objs, a, what):
    """Fixed --n-input + --val-targets view splits, one per object; exits when an object has too few views."""
    need = a.n_input + a.val_targets
    splits = [s for s in lact_data.fixed_splits(objs, a.n_input, a.val_targets) if len(s) == need]
    if len(splits) != len(objs):
        raise SystemExit("%s: validation objects need >= %d views" % (what, need))
    return splits


def load_extra_validation(a, size, device, on_device, say):
    """[(name, sampler, splits, n_input)] for --val-extra and --val-real."""
    out = []
    for spec in a.val_extra:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit("--val-extra: expected NAME=PATH, got '%s'" % spec)
        objs = load_sources([path], size, device, say)
        splits = validation_splits(objs, a, path)
        say("val_%s: %s" % (name, objs.describe()))
        out.append((name, Sampler(objs, size, device, on_device), splits, a.n_input))
    if a.val_real:
        objs = load_sources([a.val_real], size, device, say)
        try:
            inputs = [int(v) for v in a.val_real_inputs.split(",")]
            targets = [int(v) for v in a.val_real_targets.split(",")]
        except ValueError:
            raise SystemExit("--val-real-inputs/--val-real-targets: expected comma-separated view numbers")
        views = objs.images[0].shape[0]
        if len(objs) != 1 or max(inputs + targets) >= views or min(inputs + targets) < 0:
            raise SystemExit("%s: --val-real needs one object with views 0..%d" % (a.val_real, max(inputs + targets)))
        say("val_real: %s, inputs %s, targets %s" % (objs.describe(), a.val_real_inputs, a.val_real_targets))
        out.append(("real", Sampler(objs, size, device, on_device), [np.array(inputs + targets)], len(inputs)))
    return out


# ----------------------------------------------------------------------------- main
def add_run_args(g):
    """The "run" flags: output, device, processes, limits, checkpoints, validation cadence."""
    g.add_argument("--out", required=True)
    g.add_argument("--device", default="auto", help="auto / cpu / cuda")
    g.add_argument("--amp", choices=("auto", "bf16", "none"), default="auto", help="auto: bf16 on CUDA")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--ranks", type=int, default=1,
                   help="CPU data parallelism: split each step's --batch over this many processes of --threads "
                        "threads each (gloo on loopback; the same steps as one process, sooner). Rank 0 "
                        "validates, logs and checkpoints; resuming with another --ranks continues the same run")
    g.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default). More threads than idle cores "
                   "is very slow (OpenMP spin-waits): on a shared machine keep 1")
    g.add_argument("--deterministic", choices=("auto", "yes", "no"), default="auto", help="auto: yes on CPU")
    g.add_argument("--max-minutes", type=float, default=0,
                   help="wall limit of this process (from its start, data loading included): "
                        "stop in time to validate and save, then exit 0")
    g.add_argument("--ckpt-every", type=int, default=200, help="steps (0: off)")
    g.add_argument("--ckpt-every-minutes", type=float, default=0, help="also save every this many minutes")
    g.add_argument("--val-every", type=int, default=200, help="steps (0: off)")
    g.add_argument("--val-every-minutes", type=float, default=0, help="also validate every this many minutes")
    g.add_argument("--log-every", type=int, default=1)
    g.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint in --out")
    g.add_argument("--no-preview", action="store_true")
    g.add_argument("--compile", action="store_true", help="torch.compile the model (torch 2.x)")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = ap.add_argument_group("data")
    g.add_argument("--data", nargs="+", required=True, help="shards / LaCT layouts / synthetic:...")
    g.add_argument("--val-data", nargs="*", default=None)
    g.add_argument("--val-objects", type=int, default=8, help="held out from --data when no --val-data")
    g.add_argument("--val-extra", nargs="*", default=[], metavar="NAME=PATH",
                   help="extra validation sets, logged as val_NAME")
    g.add_argument("--val-real", default=None, help="a real object (LaCT layout) validated on fixed views")
    g.add_argument("--val-real-inputs", default="16,20,24,28,34,38,42,46")
    g.add_argument("--val-real-targets", default="2,10,18,26,32,40,50,58")
    g.add_argument("--size", type=int, default=64, help="working image size (H = W)")
    g.add_argument("--n-input", type=int, default=8)
    g.add_argument("--n-target-min", type=int, default=4)
    g.add_argument("--n-target-max", type=int, default=8)
    g.add_argument("--val-targets", type=int, default=4, help="target views per validation object")
    g.add_argument("--data-on-device", choices=("auto", "yes", "no"), default="auto")
    g.add_argument("--bg-random", type=float, default=0.5,
                   help="fraction of training objects composited onto a random colour instead of white "
                        "(same colour for an object's inputs and targets; validation is always on white). "
                        "Keeps the model from settling on a constant near-white image early on")
    g = ap.add_argument_group("model (a --preset, then any flag given overrides it)")
    g.add_argument("--preset", choices=sorted(PRESETS), default="small")
    g.add_argument("--init", help="start from this exported model (.safetensors; its config wins) instead of "
                                  "random weights; a checkpoint in --out still takes precedence")
    g.add_argument("--config", help="model config JSON (overrides the preset and size flags)")
    g.add_argument("--variant", choices=sorted(VARIANT_PRESETS) + sorted(TTT_VARIANTS),
                   help="TTT variant (Liu et al. 2026): baseline, v1..v4, v6 or the authors' ttt_loss_type; "
                        "the straight_qk ones (v3-v6) use inter_multi 1")
    g.add_argument("--dim", type=int)
    g.add_argument("--layers", type=int)
    g.add_argument("--patch", type=int)
    g.add_argument("--attn-head-dim", type=int)
    g.add_argument("--ttt-head-dim", type=int)
    g.add_argument("--ttt-inter-multi", type=float)
    g.add_argument("--ttt-base-lr", type=float)
    g.add_argument("--muon-steps", type=int)
    g.add_argument("--mlp-inter-multi", type=float)
    g.add_argument("--no-qk-norm", action="store_true")
    g.add_argument("--ns-dtype", default=None, help="Newton-Schulz dtype (bf16/fp32); default: model default")
    g = ap.add_argument_group("optimisation")
    g.add_argument("--batch", type=int, default=2)
    g.add_argument("--lr", type=float, default=4e-4)
    g.add_argument("--min-lr-ratio", type=float, default=0.1)
    g.add_argument("--warmup", type=int, default=100)
    g.add_argument("--steps", type=int, default=20000, help="total steps (cosine horizon unless --time-schedule)")
    g.add_argument("--weight-decay", type=float, default=0.05)
    g.add_argument("--beta1", type=float, default=0.9)
    g.add_argument("--beta2", type=float, default=0.95)
    g.add_argument("--clip", type=float, default=1.0)
    g.add_argument("--skip-grad-norm", type=float, default=0.0,
                   help="skip the update when the grad norm exceeds this (0: never; paper: 4 after step 1000)")
    g.add_argument("--skip-after", type=int, default=1000)
    g.add_argument("--ssim-weight", type=float, default=0.1)
    g.add_argument("--time-schedule", action="store_true", help="cosine over --max-minutes of wall time")
    add_run_args(ap.add_argument_group("run"))
    a = ap.parse_args(argv)
    for k, v in PRESETS[a.preset].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.ranks <= 1 or RANK_ENV in os.environ:
        return train(a)
    if a.device not in ("auto", "cpu") or (a.device == "auto" and torch.cuda.is_available()):
        sys.exit("train.py: --ranks is CPU data parallelism; on a GPU use one process (or --device cpu)")
    if a.batch % a.ranks:
        sys.exit("train.py: --batch %d does not split over --ranks %d" % (a.batch, a.ranks))
    workers = launch_workers(a.ranks, [os.path.abspath(__file__)] + list(sys.argv[1:] if argv is None else argv))
    try:
        rc = train(a)
    except BaseException:
        for w in workers:
            w.kill()
        raise
    stop_workers(workers)
    return rc


class RunLog:
    """The run's console lines and log.jsonl records; only rank 0 writes (the other ranks stay silent)."""

    def __init__(self, out, fresh, enabled):
        self.t_start = time.time()
        path = os.path.join(out, "log.jsonl")
        self.f = None
        if enabled:
            if fresh and os.path.exists(path):  # a fresh run starts a fresh log (the old one is kept aside)
                os.replace(path, path + ".old")
            self.f = open(path, "a")

    def say(self, msg):
        if self.f is not None:
            print("[train %7.1fs] %s" % (time.time() - self.t_start, msg), flush=True)

    def log(self, rec):
        if self.f is not None:
            self.f.write(json.dumps(rec, sort_keys=True) + "\n")
            self.f.flush()

    def close(self):
        if self.f is not None:
            self.f.close()


class Precision:
    """bf16 autocast or fp32; calling it gives the context the forward runs in."""

    def __init__(self, device, bf16):
        self.device, self.bf16 = device, bf16

    @property
    def name(self):
        return "bf16" if self.bf16 else "fp32"

    def __call__(self):
        if self.bf16:
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return torch.autocast(device_type="cpu", enabled=False)


def setup_device(a):
    """-> device, deterministic, Precision; sets the thread count, deterministic algorithms and TF32."""
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(a.device)
    if a.threads:
        torch.set_num_threads(a.threads)
    deterministic = a.deterministic == "yes" or (a.deterministic == "auto" and device.type == "cpu")
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True) if device.type == "cuda" else \
            torch.use_deterministic_algorithms(True)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device, deterministic, Precision(device, a.amp == "bf16" or (a.amp == "auto" and device.type == "cuda"))


def make_model(a, resume, device, say):
    """-> model, config: a checkpoint's, an exported model's (--init, weights too), --config's or the flags'."""
    init = None
    if resume is None and a.init:  # continue from an exported model (weights only, fresh optimiser)
        init, init_meta = safetensors_io.load(a.init)
        config = json.loads(init_meta["config"])
        say("initialising from %s" % a.init)
    if resume is not None:
        config = resume["config"]
    elif init is not None and a.variant:  # e.g. a baseline model continued as V1 or V2 (same tensors)
        config = with_variant(config, a.variant)
    elif a.config:
        with open(a.config) as f:
            config = json.load(f)
        if a.variant:
            config = with_variant(config, a.variant)
    else:
        config = build_config(a)
    if resume is not None and not a.config and config != build_config(a):
        say("note: model flags differ from the checkpoint; using the checkpoint's config")
    model = LaCTTrainModel(config)
    init_weights(model, a.seed)
    if init is not None:
        model.load_state_dict(init, strict=True)
    if a.ns_dtype:
        model.ns_dtype = a.ns_dtype
    return model.to(device), config


def load_data(a, device, is_main, say):
    """-> train_objs, val_objs, Sampler of the training set, validation sets [(kind, sampler, splits, n_input)]
    (empty on the ranks that do not validate)."""
    size = (a.size, a.size)
    on_device = a.data_on_device == "yes" or (a.data_on_device == "auto" and device.type == "cuda")
    train_objs = load_sources(a.data, size, device, say)
    if a.val_data:
        val_objs = load_sources(a.val_data, size, device, say)
    elif a.val_objects > 0:
        k = min(a.val_objects, len(train_objs) - 1)
        val_objs = train_objs.subset(range(len(train_objs) - k, len(train_objs)))
        train_objs = train_objs.subset(range(len(train_objs) - k))
    else:
        val_objs = lact_data.ObjectSet()
    say("train: %s" % train_objs.describe())
    say("val:   %s" % val_objs.describe())
    val_splits = validation_splits(val_objs, a, "validation")
    val_sets = []
    if is_main and len(val_objs):
        val_sets.append(("val", Sampler(val_objs, size, device, on_device), val_splits, a.n_input))
    if is_main:
        val_sets += [("val_" + name, smp, splits, n_in)
                     for name, smp, splits, n_in in load_extra_validation(a, size, device, on_device, say)]
    return train_objs, val_objs, Sampler(train_objs, size, device, on_device), val_sets


def make_optimizer(model, a, device):
    """AdamW, weight decay on the >= 2-D parameters only (fused on CUDA where torch has it)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt_kw = dict(lr=a.lr, betas=(a.beta1, a.beta2), eps=1e-8)
    if device.type == "cuda":
        try:
            return torch.optim.AdamW(groups, fused=True, **opt_kw)
        except (TypeError, RuntimeError):
            pass
    return torch.optim.AdamW(groups, **opt_kw)


def restore(resume, model, opt, sched, state, rng, device):
    """A checkpoint's weights, optimiser, schedule, counters and RNG states."""
    model.load_state_dict(resume["model"])
    opt.load_state_dict(resume["optimizer"])
    sched.load_state_dict(resume["schedule"])
    state.update(resume["state"])
    if "cpu_seconds" not in resume["state"]:  # checkpoints from before --ranks: one thread
        state["cpu_seconds"] = state["elapsed"]
    rng.bit_generator.state = resume["rng"]["numpy"]
    random.setstate(resume["rng"]["python"])
    torch.set_rng_state(resume["rng"]["torch"])
    if device.type == "cuda" and resume["rng"].get("cuda") is not None:
        try:
            torch.cuda.set_rng_state_all(resume["rng"]["cuda"])
        except RuntimeError:
            pass


def hardware_line(device, world):
    what = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        "CPU %s x%d (torch threads %d, %d rank%s)" % (platform.processor() or platform.machine(), os.cpu_count() or 0,
                                                     torch.get_num_threads(), world, "s" if world > 1 else "")
    return "%s; torch %s" % (what, torch.__version__)


def preflight(a, model, fwd_model, sampler, opt, precision, device, runlog, step):
    """CUDA, or any run with bf16: one forward/backward of the largest batch shape, drawn with its own RNG so
    the training batches do not change. Out of memory: halve a.batch; bf16 autocast failing: fp32 (TF32
    matmuls on CUDA) instead."""
    oom_types = tuple(t for t in (getattr(torch.cuda, "OutOfMemoryError", None),) if t is not None)
    while True:
        try:
            pb = sampler.sample(np.random.default_rng(12345), a.batch, a.n_input, a.n_target_max)
            with precision():
                pp = fwd_model(pb["input_images"], pb["input_fxfycxcy"], pb["input_c2w"],
                               pb["target_fxfycxcy"], pb["target_c2w"])
            F.mse_loss(pp.float(), pb["target_images"]).backward()
            if not all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in model.parameters()):
                raise RuntimeError("non-finite gradients in the preflight step")
            del pb, pp
            break
        except RuntimeError as exc:
            msg = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            pb = pp = None
            opt.zero_grad(set_to_none=True)
            if (oom_types and isinstance(exc, oom_types)) or "out of memory" in msg:
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                if a.batch <= 1:
                    raise
                a.batch = max(1, a.batch // 2)
                runlog.say("WARNING: out of memory in the preflight step; batch -> %d" % a.batch)
                runlog.log({"type": "warning", "step": step, "message": "OOM; batch %d" % a.batch})
            elif precision.bf16:
                runlog.say("WARNING: bf16 autocast failed (%s); training in fp32" % msg)
                runlog.log({"type": "warning", "step": step, "message": "bf16 autocast failed: %s" % msg})
                precision.bf16 = False
            else:
                raise
    opt.zero_grad(set_to_none=True)
    if device.type == "cuda":
        runlog.say("preflight ok: batch %d, peak GPU memory %.1f GB" % (
            a.batch, torch.cuda.max_memory_allocated() / 2**30))


def batch_loss(fwd_model, bt, precision, ssim_weight):
    """-> loss, mse, ssim of one batch: MSE + ssim_weight * (1 - SSIM) over its target views."""
    with precision():
        pred = fwd_model(bt["input_images"], bt["input_fxfycxcy"], bt["input_c2w"],
                         bt["target_fxfycxcy"], bt["target_c2w"])
    pred = pred.float()
    tgt = bt["target_images"]
    mse = F.mse_loss(pred, tgt)
    if ssim_weight > 0:
        s = ssim(pred.flatten(0, 1), tgt.flatten(0, 1))
        return mse + ssim_weight * (1 - s), mse, s
    return mse, mse, torch.zeros(())


def train_record(window, state, lr, n_target):
    """The log record of the steps in `window`: (loss, mse, ssim, grad norm, step s, data s, skipped) each."""
    w = np.array(window, dtype=np.float64)
    return {"type": "train", "step": state["step"], "loss": float(w[:, 0].mean()),
            "mse": float(w[:, 1].mean()), "ssim": float(w[:, 2].mean()),
            "psnr": float(np.mean(-10 * np.log10(np.maximum(w[:, 1], 1e-10)))),
            "grad_norm": float(w[:, 3].mean()), "lr": lr, "samples": state["samples"],
            "elapsed": round(state["elapsed"], 3), "step_time": float(w[:, 4].mean()),
            "data_time": float(w[:, 5].mean()), "skipped": int(w[:, 6].sum()), "n_target": n_target}


class Validation:
    """The run's validation sets, evaluated and logged together (rank 0); `last` is the main set's result."""

    def __init__(self, a, fwd_model, precision, runlog, sets):
        self.a, self.fwd_model, self.precision, self.runlog, self.sets = a, fwd_model, precision, runlog, sets
        self.last = {}
        self.cost = 0.0  # seconds the last round took (the deadline keeps room for one)

    def one(self, kind, sampler, splits, n_in, state, preview=None):
        ts = time.time()
        r = validate(self.fwd_model, sampler, splits, n_in, max(1, self.a.batch), self.precision, preview)
        r.update({"type": kind, "step": state["step"], "samples": state["samples"],
                  "elapsed": round(state["elapsed"], 2), "cpu_hours": round(state["cpu_seconds"] / 3600, 4),
                  "seconds": round(time.time() - ts, 2)})
        self.runlog.log(r)
        self.runlog.say("%s step %d: psnr %.2f (white %.2f, nearest input %.2f), ssim %.4f [%d images, %.1fs]" % (
            kind, state["step"], r["psnr"], r["psnr_white"], r["psnr_nearest"], r["ssim"], r["images"],
            r["seconds"]))
        return r

    def run(self, state):
        if not self.sets or self.sets[0][0] != "val":
            return
        ts = time.time()
        preview = None if self.a.no_preview else os.path.join(self.a.out, "preview.png")
        for kind, sampler, splits, n_in in self.sets:
            r = self.one(kind, sampler, splits, n_in, state, preview if kind == "val" else None)
            if kind == "val":
                self.last = r
        self.cost = time.time() - ts


class Trainer:
    """One process's part of a run: the model, optimiser, schedule and counters, stepped and saved."""

    def __init__(self, a, dp, runlog, ckpt_path):
        self.a, self.dp, self.runlog, self.ckpt_path = a, dp, runlog, ckpt_path
        say = runlog.say
        self.device, deterministic, self.precision = setup_device(a)
        random.seed(a.seed)
        np.random.seed(a.seed)
        torch.manual_seed(a.seed)
        resume = None
        if os.path.exists(ckpt_path) and not a.fresh:
            resume = torch_load(ckpt_path)
            say("resuming from %s (step %d)" % (ckpt_path, resume["state"]["step"]))
        self.model, self.config = make_model(a, resume, self.device, say)
        dp.broadcast_parameters(self.model)
        self.n_params = sum(p.numel() for p in self.model.parameters())
        self.fwd_model = torch.compile(self.model) if a.compile else self.model
        train_objs, val_objs, self.sampler, val_sets = load_data(a, self.device, dp.is_main, say)
        self.validation = Validation(a, self.fwd_model, self.precision, runlog, val_sets)
        self.opt = make_optimizer(self.model, a, self.device)
        self.sched = Schedule(a.lr, a.warmup, a.steps, a.min_lr_ratio, None)  # time budget set by the loop
        self.rng = np.random.default_rng(a.seed)
        # elapsed: seconds in training steps (rank 0's clock); cpu_seconds: the same times the cores they used
        self.state = {"step": 0, "samples": 0, "elapsed": 0.0, "cpu_seconds": 0.0, "wall": 0.0, "runs": 0}
        if resume is not None:
            restore(resume, self.model, self.opt, self.sched, self.state, self.rng, self.device)
            del resume
        self.state["runs"] += 1
        self.cores_per_step = dp.world * torch.get_num_threads()
        self.hardware = hardware_line(self.device, dp.world)
        runlog.log({"type": "start", "step": self.state["step"], "config": self.config, "args": vars(a),
                    "params": self.n_params, "device": str(self.device), "amp": self.precision.name,
                    "deterministic": deterministic, "hardware": self.hardware, "train": train_objs.describe(),
                    "val": val_objs.describe(), "time": time.strftime("%Y-%m-%dT%H:%M:%S")})
        say("model: %d params (%.1f MB fp32), config %s" % (
            self.n_params, self.n_params * 4 / 2**20, json.dumps(self.config)))
        say("device %s, amp %s, deterministic %s, %s" % (
            self.device, "bf16" if self.precision.bf16 else "off", deterministic, self.hardware))
        if self.precision.bf16 or self.device.type == "cuda":
            preflight(a, self.model, self.fwd_model, self.sampler, self.opt, self.precision, self.device, runlog,
                      self.state["step"])

    def checkpoint(self, reason):
        """Saves ckpt_last.pt; -> the seconds it took."""
        ts = time.time()
        st = dict(self.state)
        st.update({"_np_rng": self.rng.bit_generator.state, "hardware": self.hardware, "data": self.a.data,
                   "last_val": {k: v for k, v in self.validation.last.items() if k != "type"},
                   "params": self.n_params, "amp": self.precision.name})
        save_checkpoint(self.ckpt_path, self.model, self.opt, self.sched, st, self.a, self.config)
        self.runlog.log({"type": "checkpoint", "step": self.state["step"], "reason": reason,
                         "elapsed": round(self.state["elapsed"], 2), "seconds": round(time.time() - ts, 2)})
        return time.time() - ts

    def step(self, lr, part):
        """One optimisation step on this rank's part of a batch -> (loss, mse, ssim, grad norm, step s,
        data s, skipped), the losses averaged over the ranks."""
        a, state = self.a, self.state
        ts = time.time()
        n_target = int(self.rng.integers(a.n_target_min, a.n_target_max + 1))
        bt = self.sampler.sample(self.rng, a.batch, a.n_input, n_target, a.bg_random, part)
        td = time.time()
        for g in self.opt.param_groups:
            g["lr"] = lr
        loss, mse, s = batch_loss(self.fwd_model, bt, self.precision, a.ssim_weight)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        params = list(self.model.parameters())
        loss, mse, s = self.dp.average(params, [loss.detach(), mse.detach(), s.detach().to(loss)])
        gnorm = torch.nn.utils.clip_grad_norm_(params, a.clip if a.clip > 0 else float("inf"))
        # one device sync per step for all the scalars
        f_loss, f_mse, f_ssim, gn = torch.stack([loss.detach(), mse.detach(), s.detach().to(loss),
                                                 torch.as_tensor(gnorm).to(loss)]).tolist()
        skipped = (not math.isfinite(gn)) or (a.skip_grad_norm > 0 and state["step"] >= a.skip_after
                                             and gn > a.skip_grad_norm)
        if not skipped:
            self.opt.step()
        dt = time.time() - ts
        state["step"] += 1
        state["samples"] += a.batch
        if state["step"] % 500 == 0:  # identical updates keep the ranks equal; this makes sure of it
            self.dp.broadcast_parameters(self.model)
        state["elapsed"] += dt
        state["cpu_seconds"] += dt * self.cores_per_step
        return (f_loss, f_mse, f_ssim, gn, dt, td - ts, skipped), n_target


def run_loop(tr, a, dp, runlog):
    """Steps until --steps or the --max-minutes deadline, validating and saving on rank 0 as asked;
    -> the reason it stopped."""
    state, say = tr.state, runlog.say
    tr.model.train()
    run_t0 = time.time()
    wall0 = state.get("wall", 0.0)
    deadline = runlog.t_start + a.max_minutes * 60 if a.max_minutes else None
    if a.time_schedule and deadline is not None:
        # the cosine ends a little before the deadline (final validation and save)
        tr.sched.time_budget = wall0 + 0.97 * (deadline - run_t0)
    last_val_t = last_ckpt_t = time.time()
    ckpt_cost = 0.0
    window, step_times = [], []
    if state["step"] == 0:
        tr.validation.run(state)
    part = dp.part(a.batch) if dp.world > 1 else None
    while state["step"] < a.steps:
        stop = False
        if deadline is not None:
            avg = (sum(step_times[-20:]) / len(step_times[-20:])) if step_times else 0.0
            stop = time.time() + 1.5 * avg + tr.validation.cost + ckpt_cost + 1.0 > deadline
        # rank 0's clock decides for every rank
        lr, stop = dp.decide(tr.sched.lr(state["step"], wall0 + time.time() - run_t0), stop)
        if stop:
            return "time"
        stats, n_target = tr.step(lr, part)
        step_times.append(stats[4])
        state["wall"] = wall0 + time.time() - run_t0
        window.append(stats)
        if state["step"] % a.log_every == 0 or state["step"] == a.steps:
            rec = train_record(window, state, lr, n_target)
            runlog.log(rec)
            say("step %d loss %.6f mse %.6f psnr %.2f ssim %.4f gnorm %.3f lr %.2e %.3fs/step" % (
                rec["step"], rec["loss"], rec["mse"], rec["psnr"], rec["ssim"], rec["grad_norm"], lr,
                rec["step_time"]))
            window = []
        now = time.time()
        if not dp.is_main:
            continue
        if state["step"] < a.steps and (
                (a.val_every and state["step"] % a.val_every == 0) or
                (a.val_every_minutes and now - last_val_t >= a.val_every_minutes * 60)):
            tr.validation.run(state)
            last_val_t = time.time()
        if (a.ckpt_every and state["step"] % a.ckpt_every == 0) or (
                a.ckpt_every_minutes and now - last_ckpt_t >= a.ckpt_every_minutes * 60):
            ckpt_cost = tr.checkpoint("every")
            last_ckpt_t = time.time()
    return "steps"


def train(a):
    dp = DataParallel()
    os.makedirs(a.out, exist_ok=True)
    runlog = RunLog(a.out, a.fresh, dp.is_main)
    tr = Trainer(a, dp, runlog, os.path.join(a.out, CKPT_NAME))
    run_t0 = time.time()
    reason = run_loop(tr, a, dp, runlog)
    dp.close()
    if not dp.is_main:
        return 0
    state, last = tr.state, tr.validation.last
    if not last or last.get("step") != state["step"]:  # final validation + checkpoint
        tr.validation.run(state)
        last = tr.validation.last
    tr.checkpoint(reason)
    runlog.log({"type": "end", "reason": reason, "step": state["step"], "samples": state["samples"],
                "elapsed": round(state["elapsed"], 2), "cpu_hours": round(state["cpu_seconds"] / 3600, 4),
                "run_seconds": round(time.time() - runlog.t_start, 2),
                "val": {k: last.get(k) for k in ("psnr", "psnr_white", "psnr_nearest", "ssim")}})
    runlog.say("done (%s): step %d, %d samples, %.1f s training this run" % (
        reason, state["step"], state["samples"], time.time() - run_t0))
    runlog.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
