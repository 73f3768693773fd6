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
targets vs predictions).  Export with python3 -m tools.train.export OUT/ckpt_last.pt -o model.safetensors.

The parts: options.py (flags), model_setup.py, batches.py (data), schedule.py, validation.py, checkpoint.py,
run_log.py, trainer.py (one step); this file is the loop.
"""
import os
import sys
import time

import torch

from tools.train.checkpoint import CKPT_NAME
from tools.train.data_parallel import DataParallel, RANK_ENV, launch_workers, stop_workers
from tools.train.options import parse_args
from tools.train.run_log import RunLog, train_record
from tools.train.trainer import Trainer


def main(argv=None):
    a = parse_args(__doc__.splitlines()[0], argv)
    if a.ranks <= 1 or RANK_ENV in os.environ:
        return train(a)
    if a.device not in ("auto", "cpu") or (a.device == "auto" and torch.cuda.is_available()):
        sys.exit("train.py: --ranks is CPU data parallelism; on a GPU use one process (or --device cpu)")
    if a.batch % a.ranks:
        sys.exit("train.py: --batch %d does not split over --ranks %d" % (a.batch, a.ranks))
    workers = launch_workers(a.ranks, ["-m", "tools.train.train"] + list(sys.argv[1:] if argv is None else argv))
    try:
        rc = train(a)
    except BaseException:
        for w in workers:
            w.kill()
        raise
    stop_workers(workers)
    return rc


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
