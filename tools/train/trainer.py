"""One process's part of a training run: the model, optimiser, schedule and counters, stepped and saved."""
import json
import math
import os
import random
import time

import numpy as np
import torch
import torch.nn.functional as F

from tools.train.batches import load_data
from tools.train.checkpoint import restore, save_checkpoint, torch_load
from tools.train.model_setup import hardware_line, make_model, setup_device
from tools.train.schedule import Schedule, make_optimizer
from tools.train.ssim import ssim
from tools.train.validation import Validation


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
